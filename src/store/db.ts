import type { QueryResultRow } from 'pg';

/** What the service needs of a database: queries and transactions. Both engines speak `pg`. */
export interface Queryable {
  /**
   * `prepared`: the statement is prepared once per connection (a named statement, named after its
   * text) and only bound and executed afterwards, so PostgreSQL does not parse and plan it again on
   * every call. For the hot reads whose plan does not depend on the values.
   */
  query<R extends QueryResultRow = QueryResultRow>(sql: string, params?: unknown[], how?: { prepared?: boolean }): Promise<{ rows: R[]; rowCount: number | null }>;
}

export interface Db extends Queryable {
  /**
   * Runs `fn` in one transaction; rolls back when it throws. `unbounded`: its statements wait as
   * long as they take (migrations: an index built on a large table, the lock another replica's
   * migration holds); others are cut at the engine's statement timeout.
   */
  tx<T>(fn: (q: Queryable) => Promise<T>, how?: { unbounded?: boolean }): Promise<T>;
  readonly engine: 'postgres' | 'pglite';
  /** Human-readable target, e.g. the PGlite directory or the PostgreSQL host/db (no password). */
  readonly describe: string;
  close(): Promise<void>;
  /** The connection pool's use now, for metrics; absent where there is no pool (a transaction's `Db`). */
  poolStats?(): PoolStats;
}

export interface PoolStats { total: number; idle: number; waiting: number; max: number }

export function isPgError(err: unknown, code: string): err is Error & { code: string; constraint?: string; detail?: string } {
  return typeof err === 'object' && err !== null && (err as { code?: string }).code === code;
}

/**
 * The `Db` of a transaction already open on `q` (from `outer.tx`): queries run in it, and its `tx`
 * is a savepoint, so code written for a `Db` (one transaction per operation) can run many
 * operations as one all-or-nothing unit. An operation that fails rolls back to its savepoint and
 * throws; the outer transaction then decides.
 */
export function savepointDb(q: Queryable, outer: Db): Db {
  let n = 0;
  return {
    engine: outer.engine,
    describe: outer.describe,
    query: <R extends QueryResultRow = QueryResultRow>(sql: string, params?: unknown[], how?: { prepared?: boolean }) => q.query<R>(sql, params, how),
    async tx<T>(fn: (inner: Queryable) => Promise<T>): Promise<T> {
      const sp = `ep_sp_${++n}`;
      await q.query(`SAVEPOINT ${sp}`);
      try {
        const result = await fn(q);
        await q.query(`RELEASE SAVEPOINT ${sp}`);
        return result;
      } catch (err) {
        await q.query(`ROLLBACK TO SAVEPOINT ${sp}`).catch(() => {});
        throw err;
      }
    },
    close: async () => {},
  };
}
