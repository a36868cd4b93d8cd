import type { Along, Db, Queryable } from './db.js';

/**
 * A response kept for an `Idempotency-Key`, with the hash of the request it answered: the body as
 * sent, or (`object_id`, body null) a reference to the object whose current state a replay reads.
 */
export interface KeptResponse {
  request_hash: string;
  status: number;
  headers: Record<string, string>;
  body: unknown;
  object_id?: string | null;
}

/**
 * Claims the key for this transaction, or returns false at once when another transaction holds it
 * (a request with the same key still in progress, on any replica sharing the database).
 */
export async function claimKey(q: Queryable, accountId: string, key: string): Promise<boolean> {
  const { rows } = await q.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock(hashtextextended($1, 18)) AS ok', [`idem ${accountId} ${key}`]);
  return rows[0].ok;
}

/**
 * Claims the key for this transaction and reads the response kept for it, in one round trip:
 * `claimed` false when another transaction holds the key; `kept` the response, unless there is
 * none or it expired. One plain statement (prepared: parsed and planned once per connection), so
 * its snapshot is taken before the lock: a response committed by the request that held the key
 * until just now may be missed. `keepResponse` then finds that live row and refuses to write over
 * it (`KeyKeptMeanwhile`), and the caller runs its transaction again, whose claim sees it.
 * (Migration 016's function, which took the lock before its read, stays for older replicas.)
 */
export async function claimAndRead(q: Queryable, accountId: string, key: string): Promise<{ claimed: boolean; kept?: KeptResponse }> {
  const { rows } = await q.query<{ claimed: boolean } & KeptResponse>(
    `SELECT l.claimed, k.request_hash, k.status, k.headers, k.body, k.object_id
     FROM (SELECT pg_try_advisory_xact_lock(hashtextextended('idem ' || $1::text || ' ' || $2::text, 18)) AS claimed) l
     LEFT JOIN idempotency_keys k ON l.claimed AND k.account_id = $1 AND k.key = $2 AND k.expires_at > now()`,
    [accountId, key],
    { prepared: true },
  );
  const r = rows[0];
  if (!r?.claimed) return { claimed: false };
  return r.request_hash === null
    ? { claimed: true }
    : { claimed: true, kept: { request_hash: r.request_hash, status: r.status, headers: r.headers, body: r.body, object_id: r.object_id } };
}

/**
 * A live response was kept for the key after this transaction's claim read none (see
 * `claimAndRead`): nothing may be written over it; the transaction is run again.
 */
export class KeyKeptMeanwhile extends Error {
  constructor() {
    super('a response was kept for this Idempotency-Key after the claim read none');
    this.name = 'KeyKeptMeanwhile';
  }
}

/** The response kept for the key, unless it expired. */
export async function keptResponse(q: Queryable, accountId: string, key: string): Promise<KeptResponse | undefined> {
  const { rows } = await q.query<KeptResponse>(
    'SELECT request_hash, status, headers, body, object_id FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND expires_at > now()',
    [accountId, key],
  );
  return rows[0];
}

/**
 * How a keep finds its key. `claimed`: claimed and read first in its transaction (`claimAndRead`,
 * none live): it writes over an expired response, and never over a live one (one committed after
 * the read: it writes nothing, `KeyKeptMeanwhile`). `unread`: the key was not read, and no other
 * transaction can write it meanwhile (PGlite's one session): a plain insert, which a response kept
 * for the key, live or expired, fails as a unique violation (23505): the transaction must then be
 * run again claim first. `claim`: as `unread`, with the key's claim taken in the same statement
 * first (PostgreSQL, `claimSql`): while another transaction holds the key, nothing is written
 * (`KeyClaimedElsewhere`). A plain insert costs PGlite about half of the one with `ON CONFLICT`.
 */
export type KeepMode = 'claimed' | 'unread' | 'claim';

/**
 * The statement that keeps a response (`keepResponse`), its placeholders numbered from `$first`:
 * alone, or as a data-modifying CTE of a write's own statement (`keepAlong`). It writes one row,
 * or (`claimed`) none when a live response is kept for the key, or (`claim`) none when the CTE
 * `claim` did not get the key's lock; the caller must then not commit.
 */
function keepSql(first: number, mode: KeepMode): string {
  const [account, key, hash, status, headers, body, objectId, bytes, hours] = Array.from({ length: 9 }, (_, i) => `$${first + i}`);
  // Typed here: a row selected (`claim`), unlike VALUES, does not take its columns' types.
  const row = `${account}::text, ${key}::text, ${hash}::text, ${status}::int, ${headers}::jsonb, ${body}::jsonb, ${objectId}::text, ${bytes}::int, now() + make_interval(hours => ${hours}::int)`;
  const insert = `INSERT INTO idempotency_keys (account_id, key, request_hash, status, headers, body, object_id, bytes, expires_at)
     ${mode === 'claim' ? `SELECT ${row} FROM claim WHERE claim.claimed` : `VALUES (${row})`}`;
  if (mode !== 'claimed') return insert;
  return `${insert}
     ON CONFLICT (account_id, key) DO UPDATE SET request_hash = ${hash}, status = ${status}, headers = ${headers}, body = ${body},
       object_id = ${objectId}, bytes = ${bytes}, created_at = now(), expires_at = now() + make_interval(hours => ${hours}::int)
     WHERE idempotency_keys.expires_at <= now()`;
}

/**
 * The CTE `claim`: the key's transaction lock, as `claimAndRead` takes it (the same lock: a replica
 * that claims first and one that claims in its insert exclude each other), or false at once when
 * another transaction holds it.
 */
function claimSql(first: number): string {
  return `claim AS (SELECT pg_try_advisory_xact_lock(hashtextextended('idem ' || $${first}::text || ' ' || $${first + 1}::text, 18)) AS claimed)`;
}

/**
 * A key claimed by another transaction when a write that claims it in its own statement ran
 * (`keepAlong`, `claim`): a request with the key is in progress. Nothing may commit.
 */
export class KeyClaimedElsewhere extends Error {
  constructor() {
    super('another transaction holds this Idempotency-Key');
    this.name = 'KeyClaimedElsewhere';
  }
}

/** The CTEs of `keepAlong`, by mode: one function per text (`insertObjectAlong` keeps its statement by it). */
const ALONG_SQL: Record<KeepMode, (first: number) => string> = {
  claimed: (first) => `along AS (${keepSql(first, 'claimed')} RETURNING 1)`,
  unread: (first) => `along AS (${keepSql(first, 'unread')} RETURNING 1)`,
  claim: (first) => `${claimSql(first)}, along AS (${keepSql(first, 'claim')} RETURNING 1)`,
};

/**
 * `keepResponse` as a statement that rides on the write's own (an object's insert): the keep
 * costs no round trip of its own. The carrier throws `KeyKeptMeanwhile` or `KeyClaimedElsewhere`
 * when it kept nothing (`KeepMode`).
 */
export function keepAlong(accountId: string, key: string, kept: Omit<KeptResponse, 'body'>, bodyJson: string | null, hours: number, mode: KeepMode = 'claimed'): Along {
  const headers = JSON.stringify(kept.headers);
  const params = [accountId, key, kept.request_hash, kept.status, headers, bodyJson, kept.object_id ?? null, keptBytes(key, headers, bodyJson), hours];
  if (mode !== 'claim') return { sql: ALONG_SQL[mode], params, rows: 1, onShort: () => new KeyKeptMeanwhile() };
  return {
    sql: ALONG_SQL.claim, params, rows: 1, answer: '(SELECT claimed FROM claim)',
    onShort: (claimed) => (claimed === false ? new KeyClaimedElsewhere() : new KeyKeptMeanwhile()),
  };
}

/**
 * Keeps a response for `hours` (`KeepMode`: `claimed`, over an expired one of the same key; over
 * a live one never, `KeyKeptMeanwhile` is thrown; `unread`, a plain insert). The transaction must
 * not commit after a throw. `bodyJson` is the body as JSON text (null: none, or kept by reference
 * in `kept.object_id`); `bytes` is what the row counts against its account's cap.
 */
export async function keepResponse(q: Queryable, accountId: string, key: string, kept: Omit<KeptResponse, 'body'>, bodyJson: string | null, hours: number, mode: Exclude<KeepMode, 'claim'> = 'claimed'): Promise<number> {
  const along = keepAlong(accountId, key, kept, bodyJson, hours, mode);
  const { rowCount } = await q.query(KEEP_SQL[mode], along.params, { prepared: true });
  if (rowCount !== 1) throw along.onShort(null);
  return along.params[7] as number;
}
const KEEP_SQL = { claimed: keepSql(1, 'claimed'), unread: keepSql(1, 'unread') };

/** A row's size beside its texts: the request hash, timestamps, status and the tuple's header, about. */
const ROW_BYTES = 100;

/** What a kept row counts against its account's byte cap: its texts, and about a row's overhead. */
export function keptBytes(key: string, headersJson: string, bodyJson: string | null): number {
  return Buffer.byteLength(key) + Buffer.byteLength(headersJson) + (bodyJson === null ? 0 : Buffer.byteLength(bodyJson)) + ROW_BYTES;
}

/**
 * Deletes up to `limit` expired keys (of any account), the oldest first: the table stays bounded
 * by a day's keys. In the order of the expiry index, which the plan then walks from its start:
 * unordered, a plan without statistics (PGlite never runs ANALYZE) or the prepared statement's
 * generic one (its LIMIT unknown) scanned the whole table for the first expired rows, to find
 * none most of the time (4,000 live keys: 0.7 ms a sweep against 0.2).
 */
export async function sweepKeys(db: Db, limit = 500): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys WHERE (account_id, key) IN (
       SELECT account_id, key FROM idempotency_keys WHERE expires_at <= now() ORDER BY expires_at LIMIT $1)`,
    [limit],
    { prepared: true },
  );
  return rowCount ?? 0;
}

/**
 * Deletes the account's keys beyond its `keep` newest, and beyond its newest that add up to
 * `maxBytes` (the oldest go first, expired or not), so what one account sends within a day keeps a
 * bounded number of responses and bytes. Returns how many went.
 */
export async function trimKeys(db: Db, accountId: string, keep: number, maxBytes = Number.MAX_SAFE_INTEGER): Promise<number> {
  // Most trims find the account within its caps: its keys counted and summed (no sort, no window)
  // say so at a third of the window's cost or less (PGlite, 3,000 keys: about 2 ms against 6).
  // Within both caps, the window below would find no row past either: nothing to delete.
  const { rows } = await db.query<{ n: number; total: string }>(
    'SELECT count(*)::int AS n, coalesce(sum(bytes), 0)::text AS total FROM idempotency_keys WHERE account_id = $1', [accountId], { prepared: true });
  if (rows[0].n <= keep && Number(rows[0].total) <= maxBytes) return 0;
  // The newest first, along the account's index (migration 007), summing bytes as it goes; the
  // first row past either cap is the boundary, and it and every older row go.
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys WHERE account_id = $1 AND (created_at, key) <= (
       SELECT created_at, key FROM (
         SELECT created_at, key, row_number() OVER w AS n, sum(bytes) OVER w AS total
         FROM idempotency_keys WHERE account_id = $1
         WINDOW w AS (ORDER BY created_at DESC, key DESC ROWS UNBOUNDED PRECEDING)
       ) newest WHERE n > $2 OR total > $3 ORDER BY n LIMIT 1)`,
    [accountId, keep, maxBytes],
  );
  return rowCount ?? 0;
}
