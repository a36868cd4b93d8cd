// A request whose connection was lost before its answer came (the service killed, a proxy or load
// balancer dropping it, a keep-alive connection closed under it) is sent again, a few times, when
// sending it twice cannot do a thing twice: as the usual API clients do (Stripe's among them).
// Kept apart from the transport's HTTP code, so that another HTTP library keeps the same rules.

/** Methods a repeated request cannot do twice (RFC 9110). */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

/** Whether `headers` has `name` (compared without case). */
export function hasHeader(headers: Record<string, string> | undefined, name: string): boolean {
  return Object.keys(headers ?? {}).some((k) => k.toLowerCase() === name);
}

/** What the decision needs of a request. */
export interface RetryableRequest {
  method: string;
  headers?: Record<string, string>;
  /**
   * An earlier try of this request lost its connection: a refused connection now is the service
   * restarting (or a replica gone), not a wrong URL, which is reported at once.
   */
  connectionLost?: boolean;
}

/** Codes of a connection lost mid-request: node:http and node:net (`socket hang up` is ECONNRESET), undici. */
const LOST = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

/** The error's code, or that of its causes (undici's `fetch failed` carries the socket's error as `cause`). */
function failureCode(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** Whether the failure is a connection lost (or refused after one was lost), not an answer or a timeout. */
function connectionFailure(err: unknown, connectionLost: boolean): boolean {
  const code = failureCode(err);
  return code !== undefined && (LOST.has(code) || (code === 'ECONNREFUSED' && connectionLost));
}

/**
 * Whether a request that failed with `err` may be sent again at once: the connection was lost
 * (or, after a lost one, refused), and the request is safe to repeat, an idempotent method or one
 * with an `Idempotency-Key` (the service answers a repeat with the first answer). Never a POST
 * without a key: it may have been done, and a second would do it again. A request that timed out
 * (`EP_TIMEOUT`) is not sent again either: the service did not answer, and would be waited for again.
 */
export function retryableFailure(err: unknown, request: RetryableRequest): boolean {
  const safe = IDEMPOTENT_METHODS.has(request.method.toUpperCase()) || hasHeader(request.headers, 'idempotency-key');
  return safe && connectionFailure(err, !!request.connectionLost);
}

export interface ConnectionRetryOptions {
  /** The whole request's deadline, its tries and the waits between them (`--timeout`). */
  timeoutMs: number;
  /** Tries in all, the first included (default 3). */
  tries?: number;
  /** The first wait; each next one doubles (with jitter: half of it guaranteed, half random). Default 100 ms. */
  baseMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  random?: () => number;
}

export const CONNECTION_RETRY_DEFAULTS = { tries: 3, baseMs: 100 } as const;

/**
 * Sends the request (`send`, given the time left of its deadline) and, while `retryableFailure`
 * says so, again after a short wait, up to `tries` in all and within the deadline; otherwise the
 * failure is thrown as it came.
 */
export async function withConnectionRetry<T>(send: (timeLeftMs: number) => Promise<T>, request: RetryableRequest, opts: ConnectionRetryOptions): Promise<T> {
  const tries = opts.tries ?? CONNECTION_RETRY_DEFAULTS.tries;
  const base = opts.baseMs ?? CONNECTION_RETRY_DEFAULTS.baseMs;
  const now = opts.now ?? Date.now;
  const random = opts.random ?? Math.random;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = now() + opts.timeoutMs;
  let connectionLost = !!request.connectionLost;
  for (let attempt = 1; ; attempt++) {
    try {
      return await send(Math.max(1, deadline - now()));
    } catch (err) {
      if (attempt >= tries || !retryableFailure(err, { ...request, connectionLost })) throw err;
      connectionLost ||= connectionFailure(err, false);
      const step = base * 2 ** (attempt - 1);
      const wait = Math.round(step / 2 + random() * (step / 2));
      if (deadline - now() <= wait) throw err;
      await sleep(wait);
    }
  }
}
