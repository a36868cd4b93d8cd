import type { Db, Queryable } from './db.js';

export interface StackLockRow {
  id: string;
  account_id: string;
  stack: string;
  holder: string;
  created_at: Date;
  expires_at: Date;
}

const COLS = 'id, account_id, stack, holder, created_at, expires_at';

/**
 * Takes the stack's lock, or names the live lock that holds it. An expired lock is deleted in the
 * same transaction: two takers racing insert one row each, and the primary key (account, stack)
 * lets one through, on every replica sharing the database (the other waits for it, then finds it).
 */
export async function takeStackLock(
  db: Db, lock: { id: string; accountId: string; stack: string; holder: string; ttlSeconds: number },
): Promise<{ taken: StackLockRow } | { held: StackLockRow }> {
  for (;;) {
    const out = await db.tx(async (q) => {
      await q.query('DELETE FROM stack_locks WHERE account_id = $1 AND stack = $2 AND expires_at <= now()', [lock.accountId, lock.stack]);
      const { rows } = await q.query<StackLockRow>(
        `INSERT INTO stack_locks (id, account_id, stack, holder, expires_at)
         VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
         ON CONFLICT (account_id, stack) DO NOTHING RETURNING ${COLS}`,
        [lock.id, lock.accountId, lock.stack, lock.holder, lock.ttlSeconds],
      );
      if (rows[0]) return { taken: rows[0] };
      const held = await q.query<StackLockRow>(`SELECT ${COLS} FROM stack_locks WHERE account_id = $1 AND stack = $2`, [lock.accountId, lock.stack]);
      return held.rows[0] ? { held: held.rows[0] } : undefined;
    });
    // undefined: the holder released it between the insert and the read; try again.
    if (out) return out;
  }
}

/**
 * Deletes up to `limit` expired locks, of any account (an expired lock counts nowhere): each take
 * sweeps some, so the table holds about the live locks, however many are left to expire. Rows
 * another transaction is deleting are skipped, not waited for.
 */
export async function sweepStackLocks(db: Db, limit = 100): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM stack_locks WHERE id IN (
       SELECT id FROM stack_locks WHERE expires_at <= now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)`,
    [limit],
  );
  return rowCount ?? 0;
}

/** Extends a live lock to `ttlSeconds` from now; null when it expired or was released. */
export async function renewStackLock(q: Queryable, accountId: string, id: string, ttlSeconds: number): Promise<StackLockRow | null> {
  const { rows } = await q.query<StackLockRow>(
    `UPDATE stack_locks SET expires_at = now() + make_interval(secs => $3)
     WHERE account_id = $1 AND id = $2 AND expires_at > now() RETURNING ${COLS}`,
    [accountId, id, ttlSeconds],
  );
  return rows[0] ?? null;
}

/** Deletes the lock's row; false when there was none or it had expired (gone, as GET and PATCH have it). */
export async function releaseStackLock(q: Queryable, accountId: string, id: string): Promise<boolean> {
  const { rows } = await q.query<{ live: boolean }>('DELETE FROM stack_locks WHERE account_id = $1 AND id = $2 RETURNING expires_at > now() AS live', [accountId, id]);
  return rows[0]?.live === true;
}

export async function getStackLock(q: Queryable, accountId: string, id: string): Promise<StackLockRow | null> {
  const { rows } = await q.query<StackLockRow>(`SELECT ${COLS} FROM stack_locks WHERE account_id = $1 AND id = $2 AND expires_at > now()`, [accountId, id]);
  return rows[0] ?? null;
}

/** Live locks, newest first, strictly older than `beforeId`; `limit + 1` rows tell whether more remain. */
export async function listStackLocks(q: Queryable, accountId: string, opts: { limit: number; beforeId?: string }): Promise<{ rows: StackLockRow[]; more: boolean }> {
  const params: unknown[] = [accountId, opts.limit + 1];
  let sql = `SELECT ${COLS} FROM stack_locks WHERE account_id = $1 AND expires_at > now()`;
  if (opts.beforeId !== undefined) {
    params.push(opts.beforeId);
    sql += ' AND id < $3';
  }
  const { rows } = await q.query<StackLockRow>(`${sql} ORDER BY id DESC LIMIT $2`, params);
  return { rows: rows.slice(0, opts.limit), more: rows.length > opts.limit };
}
