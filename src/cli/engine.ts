import { resolve } from 'node:path';
import type { Db } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import { openPglite, type PgliteDb } from '../store/pglite.js';
import { openPostgres } from '../store/postgres.js';

export const DEFAULT_STATE_DIR = './state';

export interface EngineChoice { stateDir?: string }

export function stateDirOf(opts: EngineChoice): string {
  return resolve(opts.stateDir ?? process.env.EDGEPLANE_STATE ?? DEFAULT_STATE_DIR);
}

/** PostgreSQL when DATABASE_URL is set, else PGlite in the state directory; migrated either way. */
export async function openEngine(opts: EngineChoice): Promise<Db & { lock?: PgliteDb['lock'] }> {
  const url = process.env.DATABASE_URL;
  const db = url ? await openPostgres(url) : await openPglite(stateDirOf(opts));
  try {
    await migrate(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}
