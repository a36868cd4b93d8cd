import { chmodSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { DirLock } from './dir-lock.js';
import { PGLITE_SETTINGS, settingsParams, templateFor, writeTemplateInto } from './pglite-template.js';
import { PoolDb } from './pool-db.js';
import type { Db } from './db.js';

export interface PgliteDb extends Db { readonly lock: DirLock | null }

/**
 * The embedded engine: PGlite with its files in `<stateDir>/pgdata`, behind the directory lock.
 * `stateDir` null gives an in-memory database (tests only). It is used through PGlite's `pg`
 * adapter (a pool of one: PGlite is a single session), so both engines share one data layer.
 */
export async function openPglite(stateDir: string | null, opts: {
  locked?: boolean; wasm?: WebAssembly.Module;
  /** false: initdb, never the template (a database with no migrations) */ template?: boolean;
  /** Opened by a command that only reads and exits (plan): its buffer pool is sized by the database (`startSettings`). */ readsOnly?: boolean;
} = {}): Promise<PgliteDb> {
  const dir = stateDir ? resolve(stateDir) : null;
  // `locked`: the caller holds the directory's lock for this process (the CLI takes it on the main
  // thread and runs the engine on the embedded service's thread).
  const lock = dir && !opts.locked ? DirLock.acquire(dir) : null;
  try {
    const data = dir ? join(dir, 'pgdata') : null;
    // A new database comes from the committed template when it fits (pglite-template.ts): no
    // initdb. In a state directory its files are written out before PGlite starts, and PGlite
    // opens them as an existing database; in memory PGlite loads it. Otherwise initdb makes it,
    // with the same settings (it would probe its own defaults while it runs, and write those to
    // postgresql.conf).
    let isNew = !data || !existsSync(join(data, 'PG_VERSION'));
    if (data && isNew && opts.template !== false && await writeTemplateInto(data, PGLITE_SETTINGS)) isNew = false;
    if (data) ownerOnly(data);
    const settings = settingsParams(PGLITE_SETTINGS);
    const template = isNew && opts.template !== false ? templateFor(PGLITE_SETTINGS) : undefined;
    const pglite = new PGlite(data ?? 'memory://', {
      startParams: [...PGlite.defaultStartParams, ...settingsParams(startSettings(data, !!opts.readsOnly))], initDbStartParams: settings,
      ...(template ? { loadDataDir: template } : {}), ...(opts.wasm ? { pgliteWasmModule: opts.wasm } : {}),
    });
    // PGlite ends its start reading the catalog's array types (a join over pg_type), for its own
    // `query` API's parsing of arrays; edgeplane queries through the `pg` adapter alone (raw
    // protocol, pg's own type parsers): that read is skipped, some 30 ms of every start. Set before
    // the start reaches it (it awaits the engine's files and WebAssembly first).
    pglite._initArrayTypes = async () => {};
    await pglite.waitReady.catch((err: Error) => {
      // Which directory (PGlite's own message names none): a damaged state directory is the usual cause.
      throw new Error(`cannot open the embedded database in ${data ?? 'memory'}: ${err.message}`, { cause: err });
    });
    const pool = new pg.Pool({ ...createPgConfig(pglite), max: 1 } as pg.PoolConfig);
    // As on PostgreSQL: an idle client's error must not crash the process (the next query reports it).
    pool.on('error', () => {});
    const db = new PoolDb(pool, 'pglite', dir ? `embedded:${dir}` : 'embedded:memory', async () => {
      await pglite.close();
      lock?.release();
    });
    return Object.assign(db, { lock });
  } catch (err) {
    lock?.release();
    throw err;
  }
}


/**
 * The database directory, made (or kept) readable by its owner only: PGlite writes its files
 * world-readable, and they hold every secret stored (the WAL in plain text). Only `pgdata/` is
 * tightened, not the state directory, which a user may have pointed at a directory of theirs.
 */
function ownerOnly(data: string): void {
  mkdirSync(data, { recursive: true, mode: 0o700 });
  const st = statSync(data);
  if ((st.mode & 0o077) !== 0 && st.uid === process.getuid?.()) chmodSync(data, 0o700);
}

/**
 * Below this size of its databases' files (a new state directory's is some 9 MB, mostly the
 * catalog), a database opened by a command that runs once gets `SMALL_POOL`.
 */
const SMALL_DATABASE = 16 << 20;
const SMALL_POOL = '2MB';

/**
 * The settings each start of the engine is given: the template's (`PGLITE_SETTINGS`), and two
 * that size its shared memory, which PostgreSQL zeroes as it starts: every MB of it is about a MB
 * of the run's peak memory and, in a fresh WebAssembly memory, some 5 ms of page faults.
 * `max_connections` is PostgreSQL's default of 100 in PGlite's configuration, but PGlite runs one
 * session: 10 leaves the lock table its default size (`max_locks_per_transaction` × 10 slots) and
 * takes 2 MB less. A command that only reads and exits (`readsOnly`: plan, export) on a small
 * database gets a 2 MB buffer pool instead of 8 (what it reads of a small stack and the catalog
 * fits, and the rest comes from the operating system's file cache); a larger database, a command
 * that writes (an apply from empty writes thousands of objects into a new database, and a small
 * pool's evictions cost it more than its start saves) and a process that stays up keep 8 MB.
 */
export function startSettings(data: string | null, readsOnly: boolean): Record<string, string> {
  const settings: Record<string, string> = { ...PGLITE_SETTINGS, max_connections: '10' };
  if (readsOnly && data && databaseBytes(data) < SMALL_DATABASE) settings.shared_buffers = SMALL_POOL;
  return settings;
}

/** The size of the databases' files under `data` (`base/`; missing: 0), summed until it is `SMALL_DATABASE`. */
function databaseBytes(data: string): number {
  let bytes = 0;
  try {
    for (const db of readdirSync(join(data, 'base'))) {
      for (const file of readdirSync(join(data, 'base', db))) {
        bytes += statSync(join(data, 'base', db, file)).size;
        if (bytes >= SMALL_DATABASE) return bytes;
      }
    }
  } catch { /* not there yet, or unreadable: PGlite says so as it opens */ }
  return bytes;
}
