import { randomUUID } from 'node:crypto';
import type { Body, KindDef, ModuleDef } from '../kinds/types.js';
import { collectionPath } from '../contract/paths.js';
import type { RawResponse, Transport } from './transport.js';
import { hasHeader, IDEMPOTENT_METHODS } from './connection-retry.js';

/** A stack lock as the API returns it. */
export interface StackLock { id: string; uri: string; stack: string; holder: string; created_at: string; expires_at: string }
/** Who holds a stack, from a 409 ERR_STACK_LOCKED. */
export interface StackLockHeld { stack: string; holder: string; created_at: string; expires_at: string }

/** The API's error body, kept whole so callers can show `error_code`, `msg` and the operation id. */
export class ApiRequestError extends Error {
  constructor(readonly method: string, readonly path: string, readonly status: number, readonly body: unknown) {
    const b = body as { error_code?: string; msg?: string; details?: { operation_id?: string } } | undefined;
    super(`${method} ${path} → ${status}${b?.error_code ? ` ${b.error_code}` : ''}: ${b?.msg ?? notTheApi(body)}${b?.details?.operation_id ? ` (operation ${b.details.operation_id})` : ''}`);
    this.name = 'ApiRequestError';
  }
  get code(): string | undefined {
    return (this.body as { error_code?: string } | undefined)?.error_code;
  }
}

/**
 * An answer without the API's error shape: most often the URL reaches something else (a proxy's
 * page, a web server). Said so, with the start of what came back, not a whole HTML page.
 */
function notTheApi(body: unknown): string {
  const text = typeof body === 'string' ? body : JSON.stringify(body) ?? '';
  const start = text.replace(/\s+/g, ' ').trim().slice(0, 160);
  return `not an edgeplane API error (is the API URL right?): ${start}${text.length > 160 ? '…' : ''}`;
}

export const PAGE_SIZE = 100;
/**
 * Pages of one list read here before a transport's reader thread is started for the rest
 * (`Transport.readAhead`): a shorter list is over before the thread would run, and starting it
 * costs a short command more than it saves.
 */
export const READ_AHEAD_AFTER = 5;

/**
 * Where a listed object (or a child listed inside it) carries the ETag its list gave (`Prefer:
 * etags`): a property JSON leaves out, read by `etagOf`.
 */
const LISTED_ETAG: unique symbol = Symbol('listed etag');

/** The ETag a list gave for this object, if it gave one. */
export function etagOf(item: Body): string | undefined {
  return (item as { [LISTED_ETAG]?: string })[LISTED_ETAG];
}

/** A list page's ETags by object id (`Prefer: etags`), of the children listed inside too. */
export type ListedEtags = Readonly<Record<string, unknown>>;

/** The ETag `etags` gives the object with this id, if it gives one. */
export function listedEtag(etags: ListedEtags, id: unknown): string | undefined {
  const e = etags[id as string];
  return typeof e === 'string' ? e : undefined;
}

/** A list page's objects, its next link (null at the end: no link, or an empty page) and its ETags. */
function pageOf(kind: KindDef, body: unknown): { items: Body[]; next: string | null; etags: ListedEtags | undefined } {
  const page = body as Record<string, unknown>;
  const items = page?.[kind.listKey!];
  if (!Array.isArray(items)) throw new Error(`list of ${kind.title}s: the response has no "${kind.listKey}" array`);
  const etags = page.etags && typeof page.etags === 'object' ? (page.etags as ListedEtags) : undefined;
  return { items: items as Body[], next: typeof page.next_page_uri === 'string' && items.length ? page.next_page_uri : null, etags };
}

/** Gives each listed object (and each child listed inside it) the ETag its page gave, for `etagOf`. */
function tagEtags(kind: KindDef, items: Body[], etags: ListedEtags): void {
  const tag = (o: unknown) => {
    if (!o || typeof o !== 'object') return;
    const e = listedEtag(etags, (o as Body).id);
    if (e !== undefined) Object.defineProperty(o, LISTED_ETAG, { value: e });
  };
  for (const item of items) {
    tag(item);
    for (const field in kind.embeds) if (Array.isArray(item?.[field])) (item[field] as unknown[]).forEach(tag);
  }
}

/**
 * Whether `send` may send the request again after a 429 or 503 that said when (`Retry-After`): an
 * idempotent method, or another one with an Idempotency-Key or If-Match.
 */
export function retriable(method: string, headers?: Record<string, string>): boolean {
  return IDEMPOTENT_METHODS.has(method) || hasHeader(headers, 'idempotency-key') || hasHeader(headers, 'if-match');
}

/** `Retry-After` as delta-seconds or an HTTP date, in ms from `now`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * A request not to send again: one that timed out (`http-exchange.ts`: the service did not
 * answer, and would only be waited for again), or one the transport refused to send at all (a path
 * off the API's origin, a closed connection: the same request is refused the same way).
 */
export function isFinal(err: unknown): boolean {
  const e = err as { code?: string; final?: boolean } | undefined;
  // A TLS failure the server would give again (an untrusted or wrong certificate, TLS to plain HTTP): `final`.
  return e?.code === 'EP_TIMEOUT' || e?.code === 'EP_NOT_SENT' || e?.final === true;
}

export interface ClientOptions {
  /** Attempts for reads on 429 / 5xx / network errors (writes are apply's to retry: it knows what is safe). */
  readAttempts?: number;
  /** `send`: how often a 429 / 503 with `Retry-After` is waited out and sent again (default 3). */
  retryAfterAttempts?: number;
  /** The longest `Retry-After` waited for; a longer one is waited this long (default 60 s). */
  maxRetryAfterMs?: number;
  /** Waits between read attempts; tests make them short. */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * A typed client for the management API, over any transport. Reads go through list pages only
 * (100 a page, following `next_page_uri`), never a GET per object; writes mirror the kind
 * descriptions (create, update, delete, module put / delete).
 */
export class ApiClient {
  private readonly attempts: number;
  private readonly sleep: (ms: number) => Promise<void>;
  /** Requests made, by method: for tests and `--verbose` (list pages, never per-object GETs). */
  readonly counts: Record<string, number> = {};

  private readonly retryAfterAttempts: number;
  private readonly maxRetryAfterMs: number;

  constructor(readonly transport: Transport, opts: ClientOptions = {}) {
    this.attempts = opts.readAttempts ?? 4;
    this.retryAfterAttempts = opts.retryAfterAttempts ?? 3;
    this.maxRetryAfterMs = opts.maxRetryAfterMs ?? 60_000;
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  }

  get target(): string {
    return this.transport.target;
  }

  /** One request; a non-2xx answer throws `ApiRequestError`. */
  async send(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<unknown> {
    const res = await this.exchange(method, path, body, headers);
    if (res.status >= 200 && res.status < 300) return res.body;
    throw new ApiRequestError(method, path, res.status, res.body);
  }

  /** One object by its path, carrying its `ETag` (`etagOf`) as a listed one does; a non-2xx answer throws. */
  async getObject(path: string): Promise<Body> {
    const res = await this.exchange('GET', path);
    if (res.status < 200 || res.status >= 300) throw new ApiRequestError('GET', path, res.status, res.body);
    const body = res.body as Body;
    const etag = res.headers.etag;
    if (body && typeof body === 'object' && typeof etag === 'string') Object.defineProperty(body, LISTED_ETAG, { value: etag });
    return body;
  }

  /**
   * One request, its answer whatever the status. A 429 or 503 that says when to come back
   * (`Retry-After`) is waited out and sent again, a bounded number of times, when sending it twice
   * is safe: an idempotent method, or an Idempotency-Key or If-Match with it (or `safe`: the
   * caller knows).
   */
  async exchange(method: string, path: string, body?: unknown, headers?: Record<string, string>, safe = retriable(method, headers)): Promise<RawResponse> {
    for (let attempt = 1; ; attempt++) {
      this.counts[method] = (this.counts[method] ?? 0) + 1;
      const res = await this.transport.request(method, path, body, headers);
      if (res.status !== 429 && res.status !== 503) return res;
      const after = parseRetryAfter(res.headers['retry-after'], Date.now());
      if (after === undefined || attempt > this.retryAfterAttempts || !safe) return res;
      await this.sleep(Math.min(after, this.maxRetryAfterMs));
    }
  }

  /** A GET with retries; `first` is the answer to a first attempt made elsewhere (the embedded service thread's page loop). */
  private async read(path: string, first?: RawResponse): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      let res: RawResponse | undefined = attempt === 1 ? first : undefined;
      if (!res) {
        try {
          this.counts.GET = (this.counts.GET ?? 0) + 1;
          res = await this.transport.request('GET', path);
        } catch (err) {
          // Closed meanwhile (the command ended on another failure): its requests are not sent again.
          if (attempt >= this.attempts || isFinal(err) || this.closing) throw err;
        }
      }
      if (res && res.status >= 200 && res.status < 300) return res.body;
      const retryable = !res || res.status === 429 || res.status >= 500;
      if (!retryable || attempt >= this.attempts) throw new ApiRequestError('GET', path, res!.status, res!.body);
      const after = parseRetryAfter(res?.headers['retry-after'], Date.now());
      await this.sleep(after !== undefined ? Math.min(after, this.maxRetryAfterMs) : Math.min(200 * 2 ** attempt, 5000) * (0.5 + Math.random() / 2));
    }
  }

  /** Every object of a kind, all pages (children are listed inside their parent); `onPage` sees each page as it arrives. */
  async list(kind: KindDef, parentId?: string, onPage?: (items: Body[]) => void): Promise<Body[]> {
    const out: Body[] = [];
    await this.eachPage(kind, parentId, (items, etags) => {
      if (etags) tagEtags(kind, items, etags);
      out.push(...items);
      onPage?.(items);
    });
    return out;
  }

  /**
   * Every page of a kind, handed to `onPage` as it arrives and not kept: what a caller does not
   * keep of a page dies young (a plan keeps only its request form of each object, not the
   * response), instead of being copied by every garbage collection until the last page is in.
   * A transport that reads pages ahead on another thread (`readPages` while `readsAhead()`: the
   * embedded service's, and HTTP's page reader, which it starts for a list that goes on past
   * `READ_AHEAD_AFTER` pages: `readAhead`) reads them, asking for each next page however busy this
   * thread is. Pages it still hands on once the list has failed are dropped. Until then,
   * from a page it hands back, or with any other transport, pages are read here, each next one
   * asked for before the one just read is handed on, with retries. Each page comes with its
   * ETags (`list` gives them to the objects; a caller that keeps its own form of each reads them).
   */
  async eachPage(kind: KindDef, parentId: string | undefined, onPage: (items: Body[], etags: ListedEtags | undefined) => void): Promise<void> {
    if (!kind.listKey) throw new Error(`${kind.title}s cannot be listed`);
    /** Set once this list has failed: pages a reader thread still hands on are not wanted. */
    let failed = false;
    const ahead = (path: string): Promise<{ path: string; res?: RawResponse } | null> => {
      const rest = this.transport.readPages!(path, (res) => {
        if (failed) return false;
        this.counts.GET = (this.counts.GET ?? 0) + 1;
        const page = pageOf(kind, res.body);
        onPage(page.items, page.etags);
        return page.next !== null;
      });
      return rest.then((from) => {
        if (from?.res) this.counts.GET = (this.counts.GET ?? 0) + 1; // the reader's request, answered with an error
        return from;
      });
    };
    const first = `${collectionPath(kind, parentId ?? null)}?limit=${PAGE_SIZE}`;
    const readsAhead = () => this.transport.readPages !== undefined && this.transport.readsAhead?.() === true;
    let reading: Promise<unknown> | undefined;
    let pages = 0;
    try {
      if (readsAhead()) {
        const from = await ahead(first);
        reading = from ? this.read(from.path, from.res) : undefined;
      } else reading = this.read(first);
      while (reading) {
        const { items, next, etags } = pageOf(kind, await reading);
        if (next !== null && ++pages >= READ_AHEAD_AFTER) this.transport.readAhead?.();
        if (next !== null && readsAhead()) {
          const rest = ahead(next);
          rest.catch(() => {}); // if `onPage` throws, nobody awaits it
          onPage(items, etags);
          const from = await rest;
          reading = from ? this.read(from.path, from.res) : undefined;
          continue;
        }
        // The next page is asked for before this one is handed on: what `onPage` does is not
        // between one response and the next request (pages come one after another). The request
        // leaves on the event loop's next turn (undici writes it then): that turn is taken first.
        reading = next === null ? undefined : this.read(next);
        if (reading) {
          reading.catch(() => {}); // if `onPage` throws, nobody awaits it; otherwise the loop sees its failure
          await new Promise((r) => setImmediate(r));
        }
        onPage(items, etags);
      }
    } catch (err) {
      failed = true;
      throw err;
    }
  }

  create(kind: KindDef, body: Body, parentId?: string): Promise<Body> {
    return this.send('POST', collectionPath(kind, parentId ?? null), body) as Promise<Body>;
  }

  update(kind: KindDef, id: string, body: Body, parentId?: string): Promise<Body> {
    return this.send('PATCH', `${collectionPath(kind, parentId ?? null)}/${id}`, body) as Promise<Body>;
  }

  async remove(kind: KindDef, id: string, parentId?: string): Promise<void> {
    await this.send('DELETE', `${collectionPath(kind, parentId ?? null)}/${id}`);
  }

  putModule(kind: KindDef, mod: ModuleDef, id: string, body: Body, parentId?: string): Promise<Body> {
    return this.send('PUT', `${collectionPath(kind, parentId ?? null)}/${id}/${mod.name}`, body) as Promise<Body>;
  }

  async deleteModule(kind: KindDef, mod: ModuleDef, id: string, parentId?: string): Promise<void> {
    await this.send('DELETE', `${collectionPath(kind, parentId ?? null)}/${id}/${mod.name}`);
  }

  // ——— stack locks (docs/api.md) ———

  /** Takes the stack's lock: the lock (201), or the error body of the live lock that holds it (409 ERR_STACK_LOCKED). */
  /**
   * The service's fingerprints of secrets (`POST /secret_fingerprints`, a batch of at most 500 a
   * request), in order; undefined where the target offers none (an empty embedded state directory,
   * a service from before them): the caller then fingerprints locally.
   */
  async fingerprintSecrets(stack: string, secrets: { identity: string; path: string; value: string }[]): Promise<string[] | undefined> {
    const out: string[] = [];
    for (let i = 0; i < secrets.length; i += 500) {
      const batch = secrets.slice(i, i + 500);
      // Safe to send again: it writes nothing.
      const res = await this.exchange('POST', '/secret_fingerprints', { stack, secrets: batch }, undefined, true);
      if ([404, 405, 409].includes(res.status)) return undefined;
      if (res.status !== 200) throw new ApiRequestError('POST', '/secret_fingerprints', res.status, res.body);
      const got = (res.body as { fingerprints?: unknown }).fingerprints;
      if (!Array.isArray(got) || got.length !== batch.length || got.some((f) => typeof f !== 'string')) throw new ApiRequestError('POST', '/secret_fingerprints', res.status, res.body);
      out.push(...(got as string[]));
    }
    return out;
  }

  async takeLock(stack: string, holder: string, ttlSeconds: number): Promise<{ lock: StackLock } | { held: StackLockHeld }> {
    // With a key of its own, a take whose answer was lost is sent again and answered with the lock
    // it took, not with a 409 naming this very holder.
    const res = await this.exchange('POST', '/stack_locks', { stack, holder, ttl_seconds: ttlSeconds }, { 'idempotency-key': `edgeplane-lock-${randomUUID()}` });
    if (res.status === 201) return { lock: res.body as StackLock };
    const b = res.body as { error_code?: string; details?: StackLockHeld } | undefined;
    if (res.status === 409 && b?.error_code === 'ERR_STACK_LOCKED' && b.details) return { held: b.details };
    throw new ApiRequestError('POST', '/stack_locks', res.status, res.body);
  }

  /** Extends the lock; null when it is gone (expired and taken, or released by someone). */
  async renewLock(id: string, ttlSeconds: number): Promise<StackLock | null> {
    // A renewal sent twice renews twice: safe to repeat.
    const res = await this.exchange('PATCH', `/stack_locks/${id}`, { ttl_seconds: ttlSeconds }, undefined, true);
    if (res.status === 404) return null;
    if (res.status >= 200 && res.status < 300) return res.body as StackLock;
    throw new ApiRequestError('PATCH', `/stack_locks/${id}`, res.status, res.body);
  }

  /** Releases the lock; false when it was gone already. */
  async releaseLock(id: string): Promise<boolean> {
    const res = await this.exchange('DELETE', `/stack_locks/${id}`);
    if (res.status === 404) return false;
    if (res.status >= 200 && res.status < 300) return true;
    throw new ApiRequestError('DELETE', `/stack_locks/${id}`, res.status, res.body);
  }

  /** The live locks of the account (at most a few pages: one per stack being applied). */
  async listLocks(): Promise<StackLock[]> {
    const out: StackLock[] = [];
    let path: string | null = '/stack_locks?limit=100';
    for (let pages = 0; path && pages < 100; pages++) {
      const page = (await this.read(path)) as { stack_locks: StackLock[]; next_page_uri: string | null };
      out.push(...page.stack_locks);
      path = page.stack_locks.length ? page.next_page_uri : null;
    }
    return out;
  }

  private closing?: Promise<void>;

  /** Closes the transport once; later calls wait for that same close. */
  close(): Promise<void> {
    return (this.closing ??= this.transport.close());
  }
}
