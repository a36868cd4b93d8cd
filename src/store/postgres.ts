import pg from 'pg';
import { PoolDb } from './pool-db.js';
import type { Db } from './db.js';

export interface PostgresOptions {
  /** Use (and create) this schema instead of `public`: lets tests share one database. */
  schema?: string;
  max?: number;
}

export async function openPostgres(url: string, opts: PostgresOptions = {}): Promise<Db> {
  if (opts.schema && !/^[a-z_][a-z0-9_]*$/.test(opts.schema)) throw new Error(`invalid schema name ${opts.schema}`);
  if (opts.schema) {
    const setup = new pg.Client({ connectionString: url });
    await setup.connect();
    try {
      await setup.query(`CREATE SCHEMA IF NOT EXISTS ${opts.schema}`);
    } finally {
      await setup.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    options: opts.schema ? `-c search_path=${opts.schema}` : undefined,
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  await pool.query('SELECT 1');
  return new PoolDb(pool, 'postgres', redactUrl(url) + (opts.schema ? ` (schema ${opts.schema})` : ''));
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres';
  }
}
