import type { Worker } from 'node:worker_threads';
import { siblingModule, startWorker } from '../util/worker.js';
import { compilePgliteWasm } from '../store/pglite-wasm.js';

/**
 * The embedded service thread's limits in a command that only reads (plan): a small young
 * generation. V8 grows it to 16 MB while the service's modules load and the engine starts, and it
 * stays resident for the rest of the run. Commands that write keep V8's default: their thread
 * answers every write and the lock's renewals, and does more of it.
 */
export const READ_ONLY_LIMITS = { maxYoungGenerationSizeMb: 4 };

let spare: Worker | undefined;

/**
 * Starts the embedded service's thread before the command knows that it will use it (the CLI
 * calls this as a command that usually does starts, `cli/prestart.ts`): the thread boots Node,
 * loads the service's modules and compiles the engine's WebAssembly while the command loads its
 * own and reads its manifests, and waits to be told which directory to open (`takeSpare`). It
 * holds nothing (the directory's lock is taken when it is handed its directory) and keeps the
 * process up for nothing: a command that ends without it just exits.
 *
 * The engine's WebAssembly is compiled from here, on V8's background threads, once the thread is
 * started (reading it and starting the compile take this thread 50–70 ms), while the thread boots and loads its
 * modules, and is posted to it (`{ wasm }`, null if the compile failed: PGlite compiles it then).
 * Not when this thread has the new directory's database to write before the service can start
 * (`freshWrite`, embedded.ts): this thread is then the one the start waits for, and the service's
 * thread, which waits for that database, compiles it.
 */
export function startSpare(how: { readOnly: boolean; freshWrite?: boolean }): void {
  if (spare) return;
  const compileHere = !process.env.DATABASE_URL && !how.freshWrite;
  const worker = startWorker(siblingModule(import.meta.url, 'embedded-service'), { workerData: { spare: true, wasmPosted: compileHere }, ...(how.readOnly ? { resourceLimits: READ_ONLY_LIMITS } : {}) });
  const wasm$ = compileHere ? compilePgliteWasm() : undefined;
  const post = (wasm: WebAssembly.Module | null) => {
    try {
      worker.postMessage({ wasm });
    } catch {
      worker.postMessage({ wasm: null }); // not transferable here: the thread's PGlite compiles it
    }
  };
  wasm$?.then(post, () => post(null));
  worker.unref();
  const gone = () => {
    if (spare === worker) spare = undefined;
  };
  // A spare that fails is not used (the service starts as without one); its error is its channel's once taken.
  worker.once('error', gone);
  worker.once('exit', gone);
  spare = worker;
}

/** The spare thread, if one runs and was not taken yet: post it `{ data }` (`EmbeddedServiceInput`). */
export function takeSpare(): Worker | undefined {
  const w = spare;
  spare = undefined;
  return w;
}
