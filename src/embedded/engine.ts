import type { Db } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import { openPglite, type PgliteDb } from '../store/pglite.js';
import { openPostgres } from '../store/postgres.js';
import { databaseUrl } from '../util/database-url.js';
import { stateDirOf } from './state-dir.js';

export interface EngineChoice {
  stateDir?: string;
  /** The state directory's lock is already held by this process (see `openPglite`). */
  locked?: boolean;
  /** An empty PGlite database in memory (DATABASE_URL aside): nothing is written anywhere. */
  memory?: boolean;
  /** For a command that only reads and exits (see `openPglite`). */
  readsOnly?: boolean;
}

/**
 * PostgreSQL when DATABASE_URL is set, else PGlite in the state directory; migrated either way.
 * `pgliteWasm`: PGlite's WebAssembly compiled ahead (`compilePgliteWasm`).
 */
export async function openEngine(opts: EngineChoice, ahead: { pgliteWasm?: WebAssembly.Module } = {}): Promise<Db & { lock?: PgliteDb['lock'] }> {
  const url = databaseUrl();
  const db = url ? await openPostgres(url) : await openPglite(opts.memory ? null : stateDirOf(opts), { locked: opts.locked, wasm: ahead.pgliteWasm, readsOnly: opts.readsOnly });
  try {
    await migrate(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}
