import type { Db, Queryable } from './db.js';

/** A response kept for an `Idempotency-Key`, with the hash of the request it answered. */
export interface KeptResponse {
  request_hash: string;
  status: number;
  headers: Record<string, string>;
  body: unknown;
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
 * Claims the key for this transaction and reads the response kept for it, in one round trip (the
 * function of migration 010: the lock is taken before the read): `claimed` false when another
 * transaction holds the key; `kept` the response, unless there is none or it expired.
 */
export async function claimAndRead(q: Queryable, accountId: string, key: string): Promise<{ claimed: boolean; kept?: KeptResponse }> {
  const { rows } = await q.query<{ claimed: boolean } & KeptResponse>('SELECT * FROM ep_claim_idempotency_key($1, $2)', [accountId, key]);
  const r = rows[0];
  if (!r?.claimed) return { claimed: false };
  return r.request_hash === null ? { claimed: true } : { claimed: true, kept: { request_hash: r.request_hash, status: r.status, headers: r.headers, body: r.body } };
}

/** The response kept for the key, unless it expired. */
export async function keptResponse(q: Queryable, accountId: string, key: string): Promise<KeptResponse | undefined> {
  const { rows } = await q.query<KeptResponse>(
    'SELECT request_hash, status, headers, body FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND expires_at > now()',
    [accountId, key],
  );
  return rows[0];
}

/** Keeps a response for `hours`, over an expired one of the same key. */
export async function keepResponse(q: Queryable, accountId: string, key: string, kept: KeptResponse, hours: number): Promise<void> {
  await q.query(
    `INSERT INTO idempotency_keys (account_id, key, request_hash, status, headers, body, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(hours => $7))
     ON CONFLICT (account_id, key) DO UPDATE SET request_hash = $3, status = $4, headers = $5, body = $6,
       created_at = now(), expires_at = now() + make_interval(hours => $7)`,
    [accountId, key, kept.request_hash, kept.status, JSON.stringify(kept.headers), kept.body === undefined ? null : JSON.stringify(kept.body), hours],
  );
}

/** Deletes up to `limit` expired keys (of any account): the table stays bounded by a day's keys. */
export async function sweepKeys(db: Db, limit = 500): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys WHERE (account_id, key) IN (
       SELECT account_id, key FROM idempotency_keys WHERE expires_at <= now() LIMIT $1)`,
    [limit],
  );
  return rowCount ?? 0;
}

/**
 * Deletes the account's keys beyond its `keep` newest (the oldest go first, expired or not), so
 * what one account sends within a day keeps a bounded number of responses. Returns how many went.
 */
export async function trimKeys(db: Db, accountId: string, keep: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys WHERE account_id = $1 AND (created_at, key) < (
       SELECT created_at, key FROM idempotency_keys WHERE account_id = $1
       ORDER BY created_at DESC, key DESC OFFSET $2 LIMIT 1)`,
    [accountId, keep - 1],
  );
  return rowCount ?? 0;
}
