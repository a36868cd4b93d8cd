import pg from 'pg';
import type { Db, Queryable } from './db.js';

/** A `Db` over a `pg.Pool`: used for real PostgreSQL and, through PGlite's pg adapter, for PGlite. */
export class PoolDb implements Db {
  constructor(
    private readonly pool: pg.Pool,
    readonly engine: Db['engine'],
    readonly describe: string,
    private readonly onClose: () => Promise<void> = async () => {},
  ) {}

  query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]) {
    return this.pool.query<R>(sql, params as unknown[]);
  }

  async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  async close() {
    await this.pool.end();
    await this.onClose();
  }
}
