import type { Queryable } from './db.js';

/** The SQL of sealed secrets (migration 015; the mechanism is `service/writes/sealing.ts`, `service/writes/secrets.ts`). */

export interface SecretsStateRow { all_sealed: boolean; fingerprint_key: Record<string, unknown> | null }

export async function secretsState(q: Queryable): Promise<SecretsStateRow> {
  const { rows } = await q.query<SecretsStateRow>('SELECT all_sealed, fingerprint_key FROM secrets_state');
  return rows[0] ?? { all_sealed: false, fingerprint_key: null };
}

export async function setAllSealed(q: Queryable, value: boolean): Promise<void> {
  await q.query('UPDATE secrets_state SET all_sealed = $1 WHERE all_sealed IS DISTINCT FROM $1', [value]);
}

/** Stores the fingerprint key when none is stored yet (`only`), or over the one stored (`over`, rotation). */
export async function storeFingerprintKey(q: Queryable, value: Record<string, unknown>, how: 'only' | 'over'): Promise<void> {
  await q.query(`UPDATE secrets_state SET fingerprint_key = $1${how === 'only' ? ' WHERE fingerprint_key IS NULL' : ''}`, [JSON.stringify(value)]);
}

/** The key ids the stored sealed values need (the objects' and the fingerprint key's). */
export async function sealedKeyIds(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ k: string }>(
    `SELECT DISTINCT k FROM (
       SELECT unnest(sealed_with) AS k FROM objects WHERE sealed_with IS NOT NULL
       UNION ALL SELECT fingerprint_key->>'ep_sealed' FROM secrets_state WHERE fingerprint_key ? 'ep_sealed') s ORDER BY k`,
  );
  return rows.map((r) => r.k);
}

export interface SecretRow { id: string; account_id: string; kind: string; body: Record<string, unknown> }

/**
 * Up to `limit` objects of `kinds` after `afterId` in id order, locked for this transaction unless
 * `lock` is false (a write of one of them waits, and then reads what was written here).
 */
export async function objectsAfter(q: Queryable, kinds: string[], afterId: string, limit: number, lock = true): Promise<SecretRow[]> {
  const { rows } = await q.query<SecretRow>(
    `SELECT id, account_id, kind, body FROM objects WHERE kind = ANY($1) AND id > $2 ORDER BY id LIMIT $3${lock ? ' FOR UPDATE' : ''}`,
    [kinds, afterId, limit],
  );
  return rows;
}

/**
 * Up to `limit` objects after `afterId` holding a value sealed by any key but `newest`, locked
 * (ones another transaction holds are skipped: a later batch or run takes them).
 */
export async function objectsSealedByOthers(q: Queryable, newest: string, afterId: string, limit: number): Promise<SecretRow[]> {
  const { rows } = await q.query<SecretRow>(
    `SELECT id, account_id, kind, body FROM objects
      WHERE sealed_with IS NOT NULL AND NOT (sealed_with <@ ARRAY[$1]::text[]) AND id > $2
      ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED`,
    [newest, afterId, limit],
  );
  return rows;
}

/** How many objects hold a value sealed by any key but `newest`. */
export async function countSealedByOthers(q: Queryable, newest: string): Promise<number> {
  const { rows } = await q.query<{ n: string | number }>(
    'SELECT count(*) AS n FROM objects WHERE sealed_with IS NOT NULL AND NOT (sealed_with <@ ARRAY[$1]::text[])', [newest],
  );
  return Number(rows[0].n);
}

/**
 * A body whose secrets were sealed or re-wrapped, nothing else changed: the version (ETag) and the
 * stored view stay as they are (the view holds no secret; migration 015 lets this write keep it).
 */
export async function writeSealedBody(q: Queryable, id: string, body: Record<string, unknown>): Promise<void> {
  await q.query("SELECT set_config('edgeplane.secrets_only', 'on', true)");
  await q.query('UPDATE objects SET body = $2 WHERE id = $1', [id, body]);
  await q.query("SELECT set_config('edgeplane.secrets_only', 'off', true)");
}

/** Sealed values per key id. */
export async function sealedCounts(q: Queryable): Promise<{ key_id: string; values: number }[]> {
  const { rows } = await q.query<{ key_id: string; n: string | number }>(
    `SELECT x #>> '{}' AS key_id, count(*) AS n FROM objects, jsonb_path_query(body, 'strict $.**.ep_sealed') x
      WHERE sealed_with IS NOT NULL GROUP BY 1 ORDER BY 1`,
  );
  return rows.map((r) => ({ key_id: r.key_id, values: Number(r.n) }));
}
