import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { AppOptions } from '../service/app.js';
import { DirLock } from '../store/dir-lock.js';
import type { EmbeddedServiceInput } from './embedded-service.js';
import type { Transport } from './transport.js';
import { WorkerChannel } from './worker-channel.js';

const ENTRY = new URL('./worker-entry.mjs', import.meta.url);
const SERVICE = new URL('./embedded-service.ts', import.meta.url);

/**
 * The embedded service on a thread of its own (`embedded-service.ts`): the same app and engine
 * (PGlite in `stateDir`, or PostgreSQL when DATABASE_URL is set), answering requests and reading
 * lists ahead while the caller's thread plans. What `watch` uses: a process that plans again and
 * again. A warm no-op plan of 6,200 objects took the service's time plus the plan's own on one
 * thread, about 1.7× the time of reading the pages; with the service on its own thread, about
 * 1.3× (bench/README.md). One-off commands do not use it: the thread needs its own TypeScript
 * loader and loads the modules both threads use again (`plan examples/small` 0.76 → 0.96 s, 215
 * → 260 MB), and a single plan does not earn that back.
 *
 * The directory's lock is taken here, on the calling thread, before anything starts: a directory
 * another process holds fails at once with `LockHeldError`. The transport is returned while the
 * service starts, so the caller reads its manifests meanwhile; requests wait for it, and fail with
 * its reason if it cannot start. Closing the transport closes the app and the engine, ends the
 * thread and releases the lock.
 */
export function embeddedThreadTransport(stateDir: string, appOptions: Partial<AppOptions> = {}): Transport {
  const dir = resolve(stateDir);
  const lock = process.env.DATABASE_URL ? null : DirLock.acquire(dir);
  let channel: WorkerChannel;
  try {
    const data: EmbeddedServiceInput = { stateDir: dir, locked: lock !== null, appOptions };
    // execArgv: [] — the thread registers the TypeScript loader itself (worker-entry.mjs).
    const worker = new Worker(ENTRY, { workerData: { module: SERVICE.href, data }, execArgv: [] });
    worker.once('exit', () => lock?.release());
    channel = new WorkerChannel(worker, 'the embedded service');
  } catch (err) {
    lock?.release();
    throw err;
  }
  let closing: Promise<void> | undefined;
  return {
    target: `embedded:${dir}`,
    request: (method, path, body) => channel.request(method, path, body),
    readPages: (path, onPage) => channel.readPages(path, onPage),
    readsAhead: () => channel.usable,
    close: () => (closing ??= channel.close(true)),
  };
}
