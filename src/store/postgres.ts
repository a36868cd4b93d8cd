import pg from 'pg';
import { redactDatabaseUrl } from '../util/database-url.js';
import { PoolDb } from './pool-db.js';
import type { Db } from './db.js';

export interface PostgresOptions {
  /** Use (and create) this schema instead of `public`: lets tests share one database. */
  schema?: string;
  max?: number;
  /** How long a request waits for a connection (a free one, or a new one to be made); default 5 s. */
  connectTimeoutMs?: number;
  /** How long a statement waits for its answer (transactions opened `unbounded` excepted); default 30 s. */
  queryTimeoutMs?: number;
}

/**
 * The waits on PostgreSQL are bounded: a database that stops answering (a network partition, a
 * stalled host) held every pooled connection for good, and the replica never recovered once it
 * was back. A request now fails (503, `ERR_UNAVAILABLE`) once no connection comes within 5 s, and
 * a connection whose statement got no answer within 30 s is dropped, so the pool connects anew.
 */
export const CONNECT_TIMEOUT_MS = 5_000;
export const QUERY_TIMEOUT_MS = 30_000;
/** How much longer the client waits than the server's statement timeout before it drops the connection. */
const QUERY_TIMEOUT_SLACK_MS = 2_000;

/** Any constant: the same in every process that may create schemas on one server. */
const SCHEMA_LOCK = 4242_0002;

export async function openPostgres(url: string, opts: PostgresOptions = {}): Promise<Db> {
  let parsed: URL | undefined;
  try { parsed = new URL(url); } catch { /* below */ }
  if (!parsed || !/^(postgres(ql)?|socket):$/.test(parsed.protocol)) {
    throw new Error(`DATABASE_URL is not a PostgreSQL URL (postgres://user[:password]@host[:port]/database): ${parsed ? `scheme ${parsed.protocol}` : 'it does not parse as a URL'}`);
  }
  if (opts.schema && !/^[a-z_][a-z0-9_]*$/.test(opts.schema)) throw new Error(`invalid schema name ${opts.schema}`);
  if (opts.schema) {
    const setup = new pg.Client({ connectionString: url });
    // A connection cut while it runs fails the query awaited; without a listener it was also an uncaught 'error'.
    setup.on('error', () => {});
    await setup.connect();
    try {
      // CREATE SCHEMA IF NOT EXISTS is not safe against a concurrent twin (one of two processes
      // starting at once fails on pg_namespace's unique index): serialise it.
      await setup.query('BEGIN');
      await setup.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
      await setup.query(`CREATE SCHEMA IF NOT EXISTS ${opts.schema}`);
      await setup.query('COMMIT');
    } finally {
      await setup.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    options: opts.schema ? `-c search_path=${opts.schema}` : undefined,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    // The server cancels a statement past it (57014, the connection stays usable): a timeout only
    // the client kept left the statement running, and a write reported failed was applied later.
    // The client's own timer, a little longer, is for a server that does not answer at all.
    statement_timeout: opts.queryTimeoutMs ?? QUERY_TIMEOUT_MS,
    query_timeout: (opts.queryTimeoutMs ?? QUERY_TIMEOUT_MS) + QUERY_TIMEOUT_SLACK_MS,
    keepAlive: true,
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    await pool.end().catch(() => {});
    // Which server, as the operator configured it (password hidden): `connect ECONNREFUSED` alone does not say.
    throw new Error(`cannot use PostgreSQL at ${redactUrl(url)}: ${(err as Error).message}`, { cause: err });
  }
  return new PoolDb(pool, 'postgres', redactUrl(url) + (opts.schema ? ` (schema ${opts.schema})` : ''));
}

export function redactUrl(url: string): string {
  return redactDatabaseUrl(url, '***');
}
