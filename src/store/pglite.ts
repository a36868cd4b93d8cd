import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { DirLock } from './dir-lock.js';
import { PoolDb } from './pool-db.js';
import type { Db } from './db.js';

export interface PgliteDb extends Db { readonly lock: DirLock | null }

/**
 * PostgreSQL settings for the embedded engine, given on every start. PGlite makes its whole buffer
 * pool resident when it starts, so PostgreSQL's 128 MB default costs 128 MB in every CLI run,
 * however small the state. 16 MB holds all the tables and indexes of 6,200 objects (11 MB); beyond
 * that, pages come from the operating system's file cache.
 */
export const PGLITE_SETTINGS: Record<string, string> = { shared_buffers: '16MB' };

/**
 * The embedded engine: PGlite with its files in `<stateDir>/pgdata`, behind the directory lock.
 * `stateDir` null gives an in-memory database (tests only). It is used through PGlite's `pg`
 * adapter (a pool of one: PGlite is a single session), so both engines share one data layer.
 */
export async function openPglite(stateDir: string | null): Promise<PgliteDb> {
  const dir = stateDir ? resolve(stateDir) : null;
  const lock = dir ? DirLock.acquire(dir) : null;
  try {
    if (dir) mkdirSync(join(dir, 'pgdata'), { recursive: true });
    const settings = Object.entries(PGLITE_SETTINGS).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
    // A new database is made by initdb, which probes its own defaults otherwise (128 MB of buffers
    // while it runs: about 35 MB more at the first command's peak) and writes them to postgresql.conf.
    const pglite = new PGlite(dir ? join(dir, 'pgdata') : 'memory://', { startParams: [...PGlite.defaultStartParams, ...settings], initDbStartParams: settings });
    await pglite.waitReady;
    const pool = new pg.Pool({ ...createPgConfig(pglite), max: 1 } as pg.PoolConfig);
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
