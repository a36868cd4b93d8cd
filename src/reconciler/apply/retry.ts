import { isFinal, parseRetryAfter } from '../../client/api-client.js';

/**
 * Retries of one HTTP call: 429 (after `Retry-After`), 5xx and network errors, with capped
 * exponential backoff and jitter. Clock, sleep and randomness are injected so tests run instantly
 * and deterministically.
 *
 * A create (a POST that makes a new object) is not idempotent: when its outcome is unknown — a
 * 5xx or a lost connection, where the server may have committed it — `resolveUnknown` is asked
 * first (apply lists for the object's ownership marker). Only when it finds nothing is the POST
 * sent again, so a retry never makes a duplicate. A 429 means "not processed" and is retried
 * directly.
 */
export interface HttpResponse {
  status: number;
  headers: Record<string, string | undefined>;
  body: unknown;
}

export interface RetryInfo { attempt: number; delayMs: number; reason: string }

export interface RetryOptions {
  /** Attempts in all, the first included; default 6. */
  attempts?: number;
  baseMs?: number;
  capMs?: number;
  /** Longest `Retry-After` honoured; a server asking for more gets this. */
  maxRetryAfterMs?: number;
  /** The call creates an object: unknown outcomes go through `resolveUnknown` before a retry. */
  create?: boolean;
  /** Finds what an unknown create made; a response when it exists, undefined when it does not. */
  resolveUnknown?: () => Promise<HttpResponse | undefined>;
  onRetry?: (info: RetryInfo) => void;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
  random?: () => number;
  signal?: AbortSignal;
}

export const RETRY_DEFAULTS = { attempts: 6, baseMs: 200, capMs: 10_000, maxRetryAfterMs: 60_000 } as const;

export function realSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(signal!.reason ?? new Error('aborted')); };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Equal jitter: half the exponential step guaranteed, half random, so retries spread but never hammer. */
export function backoffMs(retry: number, opts: { baseMs?: number; capMs?: number; random?: () => number } = {}): number {
  const base = opts.baseMs ?? RETRY_DEFAULTS.baseMs;
  const cap = opts.capMs ?? RETRY_DEFAULTS.capMs;
  const step = Math.min(cap, base * 2 ** Math.max(0, retry - 1));
  return Math.round(step / 2 + (opts.random ?? Math.random)() * (step / 2));
}

export { parseRetryAfter };

export type Verdict = 'ok' | 'retry' | 'unknown';

/**
 * What a response means for retrying: 429 retry, and a 409 saying a request with the same
 * Idempotency-Key is still in progress (an earlier attempt of this one); 5xx unknown (the server
 * may have acted), else final.
 */
export function classify(res: HttpResponse): Verdict {
  if (res.status === 429) return 'retry';
  if (res.status === 409 && (res.body as { error_code?: string } | undefined)?.error_code === 'ERR_IDEMPOTENCY_IN_PROGRESS') return 'retry';
  if (res.status >= 500) return 'unknown';
  return 'ok';
}

export class NetworkError extends Error {
  constructor(message: string, override readonly cause?: unknown) {
    super(message);
    this.name = 'NetworkError';
  }
}

function isAbort(err: unknown, signal?: AbortSignal): boolean {
  return !!signal?.aborted || (err instanceof Error && err.name === 'AbortError');
}

/**
 * Sends until the response is final (any non-retryable status, returned as is) or attempts run out
 * (the last 429/5xx response is returned; the last network error is thrown).
 *
 * A create whose outcome is unknown is looked for before anything is sent again. When the look-up
 * itself fails (the server is still down, or restarting), the outcome stays unknown: the next
 * attempts look again, after the same backoff, and the POST goes out again only once a look-up
 * has found nothing. Each POST and each look-up is one attempt.
 */
export async function withRetry(send: () => Promise<HttpResponse>, opts: RetryOptions = {}): Promise<HttpResponse> {
  const attempts = Math.max(1, opts.attempts ?? RETRY_DEFAULTS.attempts);
  const sleep = opts.sleep ?? realSleep;
  const now = opts.now ?? Date.now;
  const maxRetryAfter = opts.maxRetryAfterMs ?? RETRY_DEFAULTS.maxRetryAfterMs;
  const lookup = opts.create ? opts.resolveUnknown : undefined;
  /** Set while a create's outcome is unknown and no look-up has answered yet: why it is unknown. */
  let unknown: string | undefined;
  for (let attempt = 1; ; attempt++) {
    let res: HttpResponse | undefined;
    let error: unknown;
    let reason: string;
    if (unknown === undefined) {
      try {
        res = await send();
      } catch (err) {
        // A service that did not answer in time is not waited for again (the run would take attempts ×
        // the timeout), and a request the transport refused to send is refused again.
        if (isAbort(err, opts.signal) || isFinal(err)) throw err;
        error = err;
      }
      const verdict: Verdict = res ? classify(res) : 'unknown';
      if (verdict === 'ok') return res!;
      reason = res ? `HTTP ${res.status}` : `network error: ${error instanceof Error ? error.message : String(error)}`;
      if (verdict === 'unknown' && lookup) unknown = reason; // the create may have happened: find it first
    } else {
      reason = unknown;
    }
    let lookupFailed = false;
    if (unknown !== undefined) {
      try {
        const found = await lookup!();
        if (found) return found;
        unknown = undefined; // looked, and it is not there: the POST may go out again
      } catch (err) {
        if (isAbort(err, opts.signal)) throw err;
        const why = err instanceof Error ? err.message : String(err);
        error = new NetworkError(`the create's outcome is unknown (${unknown}) and looking for the object failed: ${why}`, err);
        lookupFailed = true;
        reason = `outcome unknown (${unknown}); looking for the object failed (${why}): looking again before any new POST`;
      }
    }
    if (attempt >= attempts) {
      if (res && !lookupFailed) return res;
      throw error;
    }
    const retryAfter = res?.status === 429 || res?.status === 503 || res?.status === 409 ? parseRetryAfter(header(res, 'retry-after'), now()) : undefined;
    const delayMs = retryAfter !== undefined ? Math.min(retryAfter, maxRetryAfter) : backoffMs(attempt, opts);
    opts.onRetry?.({ attempt: attempt + 1, delayMs, reason });
    await sleep(delayMs, opts.signal);
  }
}

function header(res: HttpResponse, name: string): string | undefined {
  for (const [k, v] of Object.entries(res.headers)) if (k.toLowerCase() === name) return v;
  return undefined;
}
