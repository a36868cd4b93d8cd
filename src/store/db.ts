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

/**
 * A statement to send within another one, as data-modifying CTEs: `sql(first)` is their text
 * (`name AS (...)`, comma-separated; the last named `along`, answering a row per row it wrote)
 * with placeholders numbered from `$first`, `params` their values. The statement that carries it
 * answers how many rows `along` wrote and the value of `answer`, an SQL expression over the CTEs
 * (`objects.ts`, `insertObjectAlong`).
 */
export interface Along {
  sql(first: number): string;
  params: unknown[];
  /** Rows it must write: fewer is `onShort(answer)`'s error, and the transaction must not commit. */
  rows: number;
  /** What the carrier answers beside its rows, for `onShort` (default: NULL). */
  answer?: string;
  onShort(answer: unknown): Error;
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

/**
 * Thrown by `flatDb` once its transaction failed in the database: the work must be run again from
 * the outer transaction's start (`cause` is the database's error).
 */
export class RunAgainFromStart extends Error {
  constructor(override readonly cause: unknown) {
    super('the transaction failed in the database: run it again from its start');
    this.name = 'RunAgainFromStart';
  }
}

/** A database error (it has a five-character SQLSTATE): the transaction it happened in is aborted. */
function isDatabaseError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

/**
 * As `savepointDb`, without the savepoints: its `tx` runs `fn` in the outer transaction as it is,
 * two round trips fewer per operation. Used where one operation runs in the outer transaction and
 * any failure fails the whole (`runIdempotent`). An operation that retries its own transaction
 * (a deadlock, a serialization failure: `Resources.tx`) cannot do so here, the outer transaction
 * being aborted: after a database error every further use throws `RunAgainFromStart`, and the
 * owner of the outer transaction runs it again from the start.
 */
export function flatDb(q: Queryable, outer: Db): Db {
  let failed: unknown;
  let isFailed = false;
  const guard = async <T>(run: () => Promise<T>): Promise<T> => {
    if (isFailed) throw new RunAgainFromStart(failed);
    try {
      return await run();
    } catch (err) {
      if (!isFailed && isDatabaseError(err)) {
        isFailed = true;
        failed = err;
      }
      throw err;
    }
  };
  return {
    engine: outer.engine,
    describe: outer.describe,
    query: <R extends QueryResultRow = QueryResultRow>(sql: string, params?: unknown[], how?: { prepared?: boolean }) => guard(() => q.query<R>(sql, params, how)),
    tx: <T>(fn: (inner: Queryable) => Promise<T>) => guard(() => fn({ query: (sql, params, how) => guard(() => q.query(sql, params, how)) })),
    close: async () => {},
  };
}

/**
 * A `Db` for a database still opening (`db$`): what is asked of it waits for it, then goes
 * straight to it. The embedded service builds its app on one while the engine starts
 * (embedded-service.ts); a failed open fails each query with the open's error.
 */
export function openingDb(db$: Promise<Db>, engine: Db['engine'], describe: string): Db {
  let open: Db | undefined;
  void db$.then((db) => (open = db), () => {});
  return {
    engine,
    get describe() { return open?.describe ?? describe; },
    query: <R extends QueryResultRow = QueryResultRow>(sql: string, params?: unknown[], how?: { prepared?: boolean }) => (open ? open.query<R>(sql, params, how) : db$.then((db) => db.query<R>(sql, params, how))),
    tx: <T>(fn: (q: Queryable) => Promise<T>, how?: { unbounded?: boolean }) => (open ? open.tx(fn, how) : db$.then((db) => db.tx(fn, how))),
    close: () => db$.then((db) => db.close(), () => {}),
  };
}
