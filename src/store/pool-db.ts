import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Db, PoolStats, Queryable } from './db.js';

/** Statement names by text: a name per distinct text, the same in every connection. */
const names = new Map<string, string>();
function statementName(sql: string): string {
  let name = names.get(sql);
  if (!name) names.set(sql, (name = 'ep_' + createHash('sha256').update(sql).digest('hex').slice(0, 24)));
  return name;
}

/** A query on a pool or a client, prepared (named) when asked: see `Queryable.query`. */
function run<R extends pg.QueryResultRow>(on: pg.Pool | pg.PoolClient, sql: string, params: unknown[] | undefined, how?: { prepared?: boolean }) {
  if (how?.prepared) return on.query<R>({ name: statementName(sql), text: sql, values: params });
  return on.query<R>(sql, params);
}

/** A `Db` over a `pg.Pool`: used for real PostgreSQL and, through PGlite's pg adapter, for PGlite. */
export class PoolDb implements Db {
  constructor(
    private readonly pool: pg.Pool,
    readonly engine: Db['engine'],
    readonly describe: string,
    private readonly onClose: () => Promise<void> = async () => {},
  ) {}

  query<R extends pg.QueryResultRow>(sql: string, params?: unknown[], how?: { prepared?: boolean }) {
    return run<R>(this.pool, sql, params, how);
  }

  /**
   * One transaction on one pooled client. The client is watched while it is checked out: a
   * connection lost meanwhile (the server restarted, `pg_terminate_backend`) is an 'error' event,
   * which with no listener crashed the process. A client whose connection failed, or whose ROLLBACK
   * did, is destroyed instead of going back to the pool.
   */
  async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    let broken: Error | undefined;
    const onError = (err: Error) => { broken = err; };
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
    try {
      await client.query('BEGIN');
      const result = await fn({ query: (sql, params, how) => run(client, sql, params, how) });
      await client.query('COMMIT');
      return result;
    } catch (err) {
      if (!broken) await client.query('ROLLBACK').catch((e: Error) => { broken = e; });
      throw err;
    } finally {
      client.off('error', onError);
      client.release(broken ?? false);
    }
  }

  poolStats(): PoolStats {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount, max: this.pool.options.max ?? 10 };
  }

  async close() {
    await this.pool.end();
    await this.onClose();
  }
}
