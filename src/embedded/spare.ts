import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { siblingModule, startWorker } from '../util/worker.js';
import { DirLock } from '../store/dir-lock.js';
import { ensureStateDir, STATE_KEYS_FILE } from './state-dir-path.js';
import type { AppOptions } from '../service/app.js';

/**
 * The embedded service thread's limits in a command that only reads (plan): a small young
 * generation. V8 grows it to 16 MB while the service's modules load and the engine starts, and it
 * stays resident for the rest of the run. Commands that write keep V8's default: their thread
 * answers every write and the lock's renewals, and does more of it.
 */
export const READ_ONLY_LIMITS = { maxYoungGenerationSizeMb: 4 };

/**
 * `liftoffOnly`: the embedded engine's WebAssembly is compiled for a command that runs once
 * (`compilePgliteWasm({ once })` in store/pglite-wasm.ts: V8's baseline compiler only, and the
 * start set compiled with the module). The CLI sets it for the commands that run once (not `serve`,
 * `watch`, `agent`); whoever compiles the WebAssembly does so (the service's thread, once its
 * modules are loaded; `admin`'s own open).
 */
export const engineTier = { liftoffOnly: false };

/**
 * A state directory taken as the CLI starts (`claimStateDir`): its lock; whether it had no database
 * (`fresh`: this process writes it); whether this process made the directory (the command says so
 * when it opens it). A command that never opens it undoes both (`abandonClaim`).
 */
export interface StateDirClaim { dir: string; lock: DirLock; fresh: boolean; made: boolean; /** its key ring was there before the claim */ hadKeys: boolean }

let spare: { worker?: Worker; claim?: StateDirClaim } | undefined;

/**
 * Starts the embedded service's thread before the command knows that it will use it (the CLI
 * calls this as a command that usually does starts, `cli/prestart.ts`): the thread boots Node,
 * loads the service's modules and compiles the engine's WebAssembly while the command loads its
 * own and reads its manifests, and waits to be told which directory to open (`takeSpare`). It
 * holds nothing (the directory's lock is taken when it is handed its directory) and keeps the
 * process up for nothing: a command that ends without it just exits.
 *
 * With a `claim` (the directory, taken already), the thread is told the directory at once: it
 * starts the engine as soon as it can (a new directory's: once the main thread has written its
 * database from the template, `{ written }`) while the command loads and reads its manifests, and
 * builds the app meanwhile on a new directory, whose claim carries the service's options
 * (`appOptions`, read from the environment as the command reads them). The command loading and
 * reading for some 300 ms is no longer followed by the template's write and the engine's start,
 * but runs beside them. A thread started before the command was known (`cli/early.ts`) is given
 * its claim here.
 */
export function startSpare(how: { readOnly: boolean; claim?: StateDirClaim; appOptions?: Partial<AppOptions>; liftoffOnly?: boolean }): void {
  if (spare?.claim) return;
  if (!spare) {
    const worker = startWorker(siblingModule(import.meta.url, 'embedded-service'), {
      workerData: { spare: true, liftoffOnly: how.liftoffOnly ?? engineTier.liftoffOnly, readsOnly: how.readOnly }, ...(how.readOnly ? { resourceLimits: READ_ONLY_LIMITS } : {}),
    });
    worker.unref();
    // A spare that fails is not used (the service starts as without one); a claim outlives it.
    const gone = () => {
      if (spare?.worker !== worker) return;
      if (spare.claim) spare = { claim: spare.claim };
      else spare = undefined;
    };
    worker.once('error', gone);
    worker.once('exit', gone);
    spare = { worker };
  }
  if (how.claim) {
    spare.claim = how.claim;
    spare.worker?.postMessage({ claim: { stateDir: how.claim.dir, readsOnly: how.readOnly, fresh: how.claim.fresh, appOptions: how.appOptions } });
  }
}

/** Stops a spare thread started before the command was known (`cli/early.ts`) that the command will not use. */
export function dropSpare(): void {
  if (!spare?.worker || spare.claim) return;
  void spare.worker.terminate();
  spare = undefined;
}

/** Tells the spare thread that its claimed directory's database is written (or left for its engine to make): it opens it now. */
export function claimWritten(): void {
  spare?.worker?.postMessage({ written: true });
}

/**
 * The state directory of a command that will most likely open it, taken as the CLI starts: made
 * (with its `.gitignore`) if missing, and locked. Undefined when that fails (another process holds
 * it; it cannot be made): the command takes it, waits for it, finds its holder or says why not when
 * it opens it, as without a claim.
 */
export function claimStateDir(dir: string, fresh: boolean): StateDirClaim | undefined {
  let made = false;
  try {
    made = ensureStateDir(dir);
    return { dir, lock: DirLock.acquire(dir), fresh, made, hadKeys: existsSync(join(dir, STATE_KEYS_FILE)) };
  } catch {
    if (made) rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}

/**
 * The spare thread, if one runs and was not taken yet: post it `{ data }` (`EmbeddedServiceInput`);
 * and the claim of `dir`, if this process claimed it (its lock; the thread, if it still runs, is
 * that directory's). Another directory's claim is left for `abandonClaim`.
 */
export function takeSpare(dir: string): { worker?: Worker; claim?: StateDirClaim } | undefined {
  if (spare?.claim && spare.claim.dir !== dir) return undefined;
  const taken = spare;
  spare = undefined;
  return taken;
}

/** Whether `dir` was made by this process's claim (`claimStateDir`): the command says so as it opens it. */
export function claimMade(dir: string): boolean {
  return spare?.claim?.dir === dir && spare.claim.made;
}

/**
 * Undoes a claim the command never took (it failed first: no manifests, a refused flag): the
 * thread is stopped (its engine may be starting), the directory removed if this process made it,
 * else the database written into it removed if it had none (and the key ring made with it), and
 * its lock released. A command that
 * fails makes nothing. Called as the CLI ends.
 */
export async function abandonClaim(): Promise<void> {
  const claimed = spare?.claim ? spare : undefined;
  if (!claimed?.claim) return;
  spare = undefined;
  await claimed.worker?.terminate();
  const { dir, lock, fresh, made, hadKeys } = claimed.claim;
  if (made) rmSync(dir, { recursive: true, force: true });
  else if (fresh) {
    // The thread may have made the key ring as it built the app.
    for (const written of ['pgdata', 'pgdata.new', ...(hadKeys ? [] : [STATE_KEYS_FILE])]) rmSync(join(dir, written), { recursive: true, force: true });
  }
  lock.release();
}
