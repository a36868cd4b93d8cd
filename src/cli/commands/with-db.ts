import { LockHeldError } from '../../store/dir-lock.js';
import { engineTier } from '../../embedded/spare.js';
import { compilePgliteWasm } from '../../store/pglite-wasm.js';
import { openEngine, type EngineChoice } from '../../embedded/engine.js';
import { databaseUrl } from '../../util/database-url.js';
import { CliExit, EXIT } from '../exit.js';
import { stateDirFor, stdio } from '../output.js';
import { stateDirOf } from '../../embedded/state-dir.js';

/**
 * Opens the engine the admin commands share (DATABASE_URL, else --state), closes it after. Admin
 * commands work on the database itself (accounts and keys are not in the API), so a state
 * directory another process holds is refused with advice that fits them.
 */
export async function withDb<T>(opts: EngineChoice, fn: (db: Awaited<ReturnType<typeof openEngine>>) => Promise<T>): Promise<T> {
  let db;
  try {
    let pgliteWasm: WebAssembly.Module | undefined;
    if (!databaseUrl()) {
      await stateDirFor(stateDirOf(opts), stdio);
      // PGlite runs on this thread here; its WebAssembly compiled for a command that runs once (if
      // that fails, PGlite compiles it itself as it opens).
      if (engineTier.liftoffOnly) pgliteWasm = await compilePgliteWasm({ once: true }).catch(() => undefined);
    }
    db = await openEngine(opts, { pgliteWasm });
  } catch (err) {
    if (!(err instanceof LockHeldError)) throw err;
    const { pid, url } = err.holder;
    throw new CliExit(EXIT.error, `${err.dir} is in use by process ${pid}${url ? `, serving at ${url}` : ''}: admin commands open the embedded database themselves (accounts and keys are not in the API), and it cannot be opened by two processes at once. Stop that process, run the admin command, then start it again.`);
  }
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}
