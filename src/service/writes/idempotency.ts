import { createHash, createHmac } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { flatDb, isPgError, RunAgainFromStart, type Along, type Db } from '../../store/db.js';
import { claimAndRead, keepAlong, keepResponse, KeyClaimedElsewhere, KeyKeptMeanwhile, sweepKeys, trimKeys, type KeepMode, type KeptResponse } from '../../store/idempotency.js';
import { canonicalJson } from '../../util/canonical-json.js';
import { ApiError } from '../../contract/errors.js';
import { etagOfBody, RenderedJson } from '../responses/serialize.js';

/** How long a response is kept for its key. */
export const IDEMPOTENCY_HOURS = 24;
export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** One keyed request in this many also deletes a batch of expired keys. */
const SWEEP_EVERY = 200;
/** One new key in this many trims its account's keys to the cap, unless told otherwise (`IdempotencyOptions`). */
const TRIM_EVERY = 100;
import { DEFAULT_MAX_BYTES_PER_ACCOUNT, DEFAULT_MAX_KEYS_PER_ACCOUNT, DEFAULT_MAX_KEPT_RESPONSE_BYTES } from '../defaults.js';

export { DEFAULT_MAX_BYTES_PER_ACCOUNT, DEFAULT_MAX_KEYS_PER_ACCOUNT, DEFAULT_MAX_KEPT_RESPONSE_BYTES };

/** How many responses an account keeps at most, in keys and bytes, and how often that is checked. */
export interface IdempotencyOptions {
  /** Keys kept per account: beyond it the oldest go first (default `DEFAULT_MAX_KEYS_PER_ACCOUNT`). */
  maxKeysPerAccount?: number;
  /** Bytes kept per account (bodies, headers, keys): beyond it the oldest go first (default `DEFAULT_MAX_BYTES_PER_ACCOUNT`). */
  maxBytesPerAccount?: number;
  /**
   * A response body of more bytes of JSON than this is kept as a reference to its object, when the
   * route can read the object again (`Reread`); up to it, as sent (default `DEFAULT_MAX_KEPT_RESPONSE_BYTES`).
   */
  maxKeptResponseBytes?: number;
  /**
   * One new key in this many (at random; default 100) has its account's keys counted and trimmed
   * after its response is kept: counting scans the account's keys, too much for every create. An
   * account may pass its caps by about this many keys between two trims.
   */
  trimEvery?: number;
}

/** What a route answers: kept for a key (whole, or by reference to `objectId`), and sent again. */
export interface RouteResult {
  status: number;
  body?: unknown;
  location?: string;
  /** Headers of a replayed response (its ETag and Location among them). */
  headers?: Record<string, string>;
  /**
   * The object whose state the body shows (created, updated, or whose module was set). A body too
   * large to keep as sent is kept as this id, and a replay reads the object again (`Reread`).
   */
  objectId?: string;
}

/**
 * Reads the object of a response kept by reference again, for a replay: what a GET of it answers
 * now (its ETag in the body, as a write's), or an `ERR_NOT_FOUND` ApiError when it is gone.
 */
export type Reread = (db: Db, objectId: string) => Promise<RouteResult>;

/**
 * The keep of a keyed write's response as a statement for the write to send with its own (a
 * create's insert: `Resources.create`), a round trip fewer: `along(result)` with the result the
 * route will answer. A write that uses it must answer that same result (its replay is what is
 * kept); one that does not is kept after it, as any other.
 */
export type KeepAlong = (result: RouteResult) => Along;

/**
 * The request's `Idempotency-Key`, or undefined. A key is 1 to 255 visible ASCII characters (a
 * UUID, a hash): anything else is refused, not silently ignored (the client counts on it).
 */
export function idempotencyKey(req: FastifyRequest): string | undefined {
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw.join(',') : raw;
  if (!/^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/.test(key)) {
    throw new ApiError('ERR_VALIDATION', 'Idempotency-Key: must be 1 to 255 visible ASCII characters (a UUID, say)');
  }
  return key;
}

/** Method, path (with its query) and body as parsed: what a key's later requests must repeat. */
function requestHash(req: FastifyRequest, key: Buffer | undefined): string {
  // Keyed by the service's fingerprint key: a request body may hold a secret, and a plain hash of
  // it kept in the database would let whoever reads a dump test guesses of that secret offline.
  return (key ? createHmac('sha256', key) : createHash('sha256')).update(`${req.method} ${req.url}\n${canonicalJson(req.body ?? null)}`).digest('base64url');
}

/**
 * Runs a write under the request's `Idempotency-Key`, if it has one. The key is claimed for the
 * request's transaction (another request with the key meanwhile: 409, on any replica), and the
 * write and the kept response commit together: a service killed between the two keeps neither, so
 * a retry after a lost response finds either the first response or nothing done. Only successful
 * responses are kept; a refused request may be sent again with the same key. An account keeps its
 * newest `maxKeysPerAccount` keys and `maxBytesPerAccount` bytes at most (`opts`): beyond them, the
 * oldest go first.
 *
 * A response is kept as sent (status, headers, body) when its body is at most
 * `maxKeptResponseBytes` of JSON. A larger one (an edge with its routes embedded: up to 8 MiB), of
 * a route that gives `reread` and names its `objectId`, is kept as status, headers (the ETag the
 * write produced, Location) and the object's id; its replay reads the object again and answers it
 * as it is now, with its current ETag, and `Idempotent-Original-ETag` naming the version the first
 * request produced when the object changed since (docs/api.md says why).
 */
export async function runIdempotent(db: Db, req: FastifyRequest, accountId: string, run: (db: Db, keep?: KeepAlong) => Promise<RouteResult>, opts: IdempotencyOptions = {}, reread?: Reread, how: { keepsAlong?: boolean } = {}): Promise<RouteResult> {
  const key = idempotencyKey(req);
  if (key === undefined) return run(db);
  const hash = requestHash(req, (await req.server.secrets?.start())?.fingerprintKey);
  if (Math.random() * SWEEP_EVERY < 1) void sweepKeys(db).catch((err: unknown) => req.log.warn({ err }, 'expired idempotency keys not swept'));
  let stored = false;
  // Where it can, the write runs first and the key is not read: its keep is a plain insert, which
  // a response kept for the key (live or expired) fails as a unique violation (`KeepMode`), and
  // any failure, a refusal included, undoes the write and runs it again claim first, which
  // replays, refuses a reuse (422), writes over an expired response, fails as before, or answers
  // 409 while another request holds the key. A statement fewer for every new key; a replay costs
  // one undone write. Where: the embedded engine (PGlite), one session of one process (the state
  // directory's lock), whose transactions never overlap; and on PostgreSQL (replicas, a pool of
  // sessions) a write that keeps its response in its first write's statement (`how.keepsAlong`: a
  // create's insert), which then claims the key before it keeps (`claim`): with the key held by
  // another transaction it keeps nothing and is 409 at once; with a response kept, it fails and
  // runs again claim first; what ran before that statement (a parent's version raised under the
  // parent's row lock, which a duplicate waits for) is undone with it. Other keyed writes on
  // PostgreSQL claim the key first: a concurrent request with it is 409 at once, before any work.
  let claimFirst = db.engine !== 'pglite' && !how.keepsAlong;
  // The write runs in the key's transaction as it is (`flatDb`: no savepoints, two round trips
  // fewer). A deadlock or serialization failure in it, which the write would otherwise retry on
  // its own, aborts that transaction: the whole is run again, claim and read of the key included.
  const attempt = () => db.tx(async (q) => {
    stored = false;
    if (claimFirst) {
      const { claimed, kept } = await claimAndRead(q, accountId, key);
      if (!claimed) throw inProgress();
      if (kept) {
        if (kept.request_hash !== hash) {
          throw new ApiError('ERR_IDEMPOTENCY_KEY_REUSED', `Idempotency-Key ${JSON.stringify(key.slice(0, 80))} was used within ${IDEMPOTENCY_HOURS} hours for another request (method, path or body differ); use a new key for a new request`);
        }
        if (kept.object_id) return replayByReference(flatDb(q, db), kept, kept.object_id, reread);
        return { status: kept.status, body: kept.body ?? undefined, headers: { ...kept.headers, 'idempotent-replayed': 'true' } };
      }
    }
    // A create keeps its response in its insert's statement (`KeepAlong`); other writes after it.
    let keptAlong = false;
    // The key claimed and read first; or not read (PGlite); or (PostgreSQL) claimed in the
    // statement that keeps along (`KeepMode`).
    const mode: KeepMode = claimFirst ? 'claimed' : db.engine === 'pglite' ? 'unread' : 'claim';
    const result = await run(flatDb(q, db), (r) => {
      keptAlong = true;
      return toKeep(r).along(mode);
    });
    if (result.status >= 200 && result.status < 300) {
      if (!keptAlong) {
        if (mode === 'claim') throw new Error('a write run before its Idempotency-Key\'s claim kept no response along');
        await keepResponse(q, ...toKeep(result).args, mode);
      }
      stored = true;
    }
    return result;
  });
  /** What is kept of a successful result (status, headers, the body as sent or by reference). */
  const toKeep = (result: RouteResult) => {
    const headers: Record<string, string> = { ...result.headers };
    if (result.location) headers.location = result.location;
    const etag = etagOfBody(result.body);
    if (etag) headers.etag = etag;
    const json = jsonOf(result.body);
    const byReference = json !== null && reread !== undefined && result.objectId !== undefined
      && Buffer.byteLength(json) > (opts.maxKeptResponseBytes ?? DEFAULT_MAX_KEPT_RESPONSE_BYTES);
    const args = [accountId, key, { request_hash: hash, status: result.status, headers, object_id: byReference ? result.objectId! : null }, byReference ? null : json, IDEMPOTENCY_HOURS] as const;
    return { args, along: (mode: KeepMode) => keepAlong(...args, mode) };
  };
  const result = await forTransientFailures(async () => {
    if (claimFirst) return attempt();
    try {
      return await attempt();
    } catch (err) {
      if (err instanceof KeyClaimedElsewhere) throw inProgress();
      claimFirst = true;
      return attempt();
    }
  });
  // The write is done and answered whatever happens here: a failed trim is tried by a later key.
  if (stored && Math.random() * (opts.trimEvery ?? TRIM_EVERY) < 1) {
    await trimKeys(db, accountId, opts.maxKeysPerAccount ?? DEFAULT_MAX_KEYS_PER_ACCOUNT, opts.maxBytesPerAccount ?? DEFAULT_MAX_BYTES_PER_ACCOUNT)
      .catch((err: unknown) => req.log.warn({ err }, 'idempotency keys beyond the account\'s caps not trimmed'));
  }
  return result;
}

function inProgress(): ApiError {
  return new ApiError('ERR_IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key is still in progress; retry it once that one is answered', {}, { 'retry-after': '1' });
}

/** A body as the JSON kept for it (null: no body). */
function jsonOf(body: unknown): string | null {
  if (body === undefined) return null;
  return body instanceof RenderedJson ? body.json : JSON.stringify(body);
}

/**
 * The replay of a response kept by reference: the kept status and headers (Location), the object
 * as it is now with its current ETag, and `Idempotent-Original-ETag` when that is not the version
 * the first request produced. An object deleted since is a 404 that says so.
 */
async function replayByReference(db: Db, kept: KeptResponse, objectId: string, reread: Reread | undefined): Promise<RouteResult> {
  if (!reread) throw new Error(`a response kept by reference (${objectId}) on a route that cannot read it again`);
  let now: RouteResult;
  try {
    now = await reread(db, objectId);
  } catch (err) {
    // The object, or the module the request set, is gone.
    if (err instanceof ApiError && err.status === 404) {
      throw new ApiError('ERR_NOT_FOUND', `${objectId}, which the first request with this Idempotency-Key wrote, was deleted since; its response is not kept whole (larger than the service keeps)`);
    }
    throw err;
  }
  const etag = etagOfBody(now.body);
  const headers: Record<string, string> = { ...kept.headers, 'idempotent-replayed': 'true' };
  if (etag) headers.etag = etag;
  if (kept.headers.etag && etag !== kept.headers.etag) headers['idempotent-original-etag'] = kept.headers.etag;
  return { status: kept.status, body: now.body, headers, objectId };
}

/** Runs of a keyed request's transaction at most, when the database fails it as a deadlock victim or a serialization failure, or its claim missed a response kept just before (`KeyKeptMeanwhile`). */
const RUNS = 3;

function transient(err: unknown): boolean {
  const cause = err instanceof RunAgainFromStart ? err.cause : err;
  // The claim missed a response committed just before it (`claimAndRead`): run again, it replays.
  if (cause instanceof KeyKeptMeanwhile) return true;
  return isPgError(cause, '40P01') || isPgError(cause, '40001');
}

async function forTransientFailures<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (!transient(err)) throw err instanceof RunAgainFromStart ? err.cause : err;
      if (attempt >= RUNS) throw new ApiError('ERR_CONFLICT', 'the object changed concurrently several times in a row; retry the request');
      await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
    }
  }
}
