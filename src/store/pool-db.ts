import { createHash } from 'node:crypto';
import pg from 'pg';
import { MAX_TIMER_MS } from '../util/time.js';
import type { Db, PoolStats, Queryable } from './db.js';

/** Statement names by text: a name per distinct text, the same in every connection. */
const names = new Map<string, string>();
function statementName(sql: string): string {
  let name = names.get(sql);
  if (!name) names.set(sql, (name = 'ep_' + createHash('sha256').update(sql).digest('hex').slice(0, 24)));
  return name;
}

/**
 * A named (prepared) statement made from its text. Given a config object (`{name, text, values}`)
 * instead, pg copies it descriptor by descriptor into a new object on every query, a few µs of
 * the reads by id that run on every GET.
 */
class NamedQuery<R extends pg.QueryResultRow> extends pg.Query<R> {
  constructor(name: string, text: string, values: unknown[] | undefined) {
    super(text, values);
    (this as { name?: string }).name = name;
  }
}


/** A query on a pool or a client, prepared (named) when asked: see `Queryable.query`. */
function run<R extends pg.QueryResultRow>(on: pg.Pool | pg.PoolClient, sql: string, params: unknown[] | undefined, how?: { prepared?: boolean; unbounded?: boolean }): Promise<pg.QueryResult<R>> {
  // `tx(fn, { unbounded: true })`: a wait longer than any statement.
  if (how?.unbounded) return on.query<R>({ text: sql, values: params, query_timeout: MAX_TIMER_MS } as pg.QueryConfig);
  if (!how?.prepared) return on.query<R>(sql, params);
  return new Promise((resolve, reject) => {
    // A client sets `done` as the query's callback; the pool sets its own, which releases the
    // client and then calls `done`.
    const done = (err: Error | null, res: pg.QueryResult<R>) => (err ? reject(err) : resolve(res));
    on.query(new NamedQuery<R>(statementName(sql), sql, params) as never, undefined as never, done as never);
  });
}

/**
 * Whether an error means the connection is gone, not that the server refused a statement: the
 * server's refusals carry a severity and a SQLSTATE, and only class 08 (connection exception) and
 * 57P* (shutdown, terminated backend, idle session timeout) end the session; 57014 (statement
 * timeout, cancel) does not.
 */
function connectionLost(err: unknown): boolean {
  const e = err as { severity?: unknown; code?: unknown };
  if (typeof e?.severity !== 'string' || typeof e.code !== 'string') return true;
  return /^(08|57P)/.test(e.code);
}

/** A `Db` over a `pg.Pool`: used for real PostgreSQL and, through PGlite's pg adapter, for PGlite. */
export class PoolDb implements Db {
  constructor(
    private readonly pool: pg.Pool,
    readonly engine: Db['engine'],
    readonly describe: string,
    private readonly onClose: () => Promise<void> = async () => {},
  ) {}

  /**
   * One statement on a pooled client. Not `pool.query`: it destroys the client after any error,
   * a constraint violation included. On PostgreSQL that is a new connection per failed statement;
   * on PGlite, whose pool hands the one in-process session to each new client, the ended client's
   * 'end' arrived at the next one: its statement failed ("Connection terminated unexpectedly")
   * and every answer after it went to the statement after the one that asked.
   */
  async query<R extends pg.QueryResultRow>(sql: string, params?: unknown[], how?: { prepared?: boolean }) {
    const c = await this.checkout();
    try {
      return await run<R>(c.client, sql, params, how);
    } catch (err) {
      c.failed(err);
      throw err;
    } finally {
      c.release();
    }
  }

  /** One transaction on one pooled client (see `checkout`); a client whose ROLLBACK failed is not reused. */
  async tx<T>(fn: (q: Queryable) => Promise<T>, opts: { unbounded?: boolean } = {}): Promise<T> {
    const c = await this.checkout();
    const { client } = c;
    const bound = opts.unbounded ? { unbounded: true } : undefined;
    try {
      await run(client, 'BEGIN', undefined, bound);
      // The server's statement timeout too (PostgreSQL's; PGlite has none set, and takes the SET alike).
      if (bound) await run(client, 'SET LOCAL statement_timeout = 0', undefined, bound);
      const result = await fn({ query: (sql, params, how) => run(client, sql, params, bound ? { ...how, ...bound } : how) });
      await run(client, 'COMMIT', undefined, bound);
      return result;
    } catch (err) {
      // What `fn` throws may be the service's own error: the connection is judged by its 'error'
      // event and by the ROLLBACK. A statement that got no answer in time leaves it unusable.
      if ((err as Error)?.message === 'Query read timeout') c.failed(err, true);
      if (!c.broken()) await client.query('ROLLBACK').catch((e: Error) => c.failed(e, true));
      throw err;
    } finally {
      c.release();
    }
  }

  /**
   * A pooled client, watched while it is checked out: a connection lost meanwhile (the server
   * restarted, `pg_terminate_backend`) is an 'error' event, which with no listener crashed the
   * process. `release` gives it back, or destroys it when its connection failed (PostgreSQL: the
   * pool connects anew). A statement the server refused (a `DatabaseError`, with its SQLSTATE)
   * leaves the connection as good as it was. PGlite's one session is never ended: there is no
   * connection to lose, and ending it misrouted the answers that followed (see `query`).
   */
  private async checkout(): Promise<{ client: pg.PoolClient; failed(err: unknown, always?: boolean): void; broken(): boolean; release(): void }> {
    let broken: unknown;
    const onError = (err: Error) => { broken ??= err; };
    // The listener goes on in the pool's callback, not after an `await`: a new connection hands
    // its client over while reading the server's first messages, and a termination in the same
    // read (`pg_terminate_backend` right after the connect) was emitted before a continuation ran.
    const client = await new Promise<pg.PoolClient>((resolve, reject) => {
      this.pool.connect((err, c) => {
        if (err || !c) return reject(err ?? new Error('no client from the pool'));
        c.on('error', onError);
        resolve(c);
      });
    });
    return {
      client,
      failed: (err, always = false) => { if (always || connectionLost(err)) broken ??= err; },
      broken: () => broken !== undefined,
      release: () => {
        client.off('error', onError);
        client.release(broken !== undefined && this.engine !== 'pglite' ? (broken as Error) : false);
      },
    };
  }

  poolStats(): PoolStats {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount, max: this.pool.options.max ?? 10 };
  }

  async close() {
    await this.pool.end();
    await this.onClose();
  }
}
