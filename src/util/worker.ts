import { Worker, workerData as dataOfThisWorker } from 'node:worker_threads';

const ENTRY = new URL('./worker-entry.mjs', import.meta.url);

/**
 * Starts `module` (a TypeScript module's URL: `new URL('./x.ts', import.meta.url)`) in a worker
 * thread, with `data` as what `workerInput()` returns there. The worker keeps the process alive
 * only while it is referenced (`worker.unref()` lets a command exit with one idle worker left).
 */
export function startWorker(module: URL, data: unknown, opts: { resourceLimits?: Worker['resourceLimits'] } = {}): Worker {
  return new Worker(ENTRY, { workerData: { module: module.href, data }, ...opts });
}

/** In a worker started by `startWorker`: the data it was given. */
export function workerInput<T>(): T {
  return (dataOfThisWorker as { data: T }).data;
}
