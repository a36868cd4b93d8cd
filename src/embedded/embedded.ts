import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { AppOptions } from '../service/app.js';
import { DirLock } from '../store/dir-lock.js';
import type { EmbeddedServiceInput } from './embedded-service.js';
import { serviceBundle } from './service-bundle.js';
import type { Transport } from '../client/transport.js';
import { redactDatabaseUrl } from '../util/database-url.js';
import { WorkerChannel } from '../client/worker-channel.js';

export { credentialsPath, readCredentials, type EmbeddedCredentials } from './embedded-credentials.js';

const ENTRY = new URL('./worker-entry.mjs', import.meta.url);
const SERVICE = new URL('./embedded-service.ts', import.meta.url);

/**
 * The embedded service as a transport: the real fastify app on the engine in `stateDir` (PGlite,
 * or PostgreSQL when DATABASE_URL is set), on a thread of its own (`embedded-service.ts`), where
 * it answers requests and reads lists ahead while the caller's thread plans. On first use it
 * provisions an account and key and keeps them in `<stateDir>/embedded.json`.
 *
 * The thread runs a JavaScript bundle of the service (`serviceBundle`), so it needs no TypeScript
 * loader and starts while the main thread loads the reconciler. Measured on 2 cores against the
 * service on the planning thread (docs/reconciler.md): `plan examples/small` 0.77 → 0.71 s and 215
 * → 205 MB; `plan` of 6,200 objects 1.30 → 1.13 s (270 → 295 MB); a warm no-op plan of those 6,200
 * about 1.7 → 1.3 times the time of reading their pages, as the service's work on the pages and
 * the plan's own overlap. Without a bundle (no esbuild, nowhere to write it), or with
 * EDGEPLANE_SERVICE_BUNDLE=off, the thread runs the sources through tsx: the same service, about
 * 0.2 s slower to start.
 *
 * The directory's lock is taken here, on the calling thread, before anything starts: a directory
 * another process holds fails at once with `LockHeldError`. The transport is returned while the
 * service starts, so the caller reads its manifests meanwhile; requests wait for it, and fail with
 * its reason if it cannot start. Closing the transport closes the app and the engine, ends the
 * thread and releases the lock.
 */
export async function embeddedTransport(stateDir: string, appOptions: Partial<AppOptions> = {}, how: { serveOthers?: boolean } = {}): Promise<Transport> {
  const dir = resolve(stateDir);
  const lock = process.env.DATABASE_URL ? null : DirLock.acquire(dir);
  let channel: WorkerChannel;
  try {
    // A long-lived holder (watch) also serves the directory to other commands, on loopback: they
    // find its URL in the lock, as they find `serve`'s, and talk to it with the directory's key.
    const data: EmbeddedServiceInput = { stateDir: dir, locked: lock !== null, appOptions, listen: !!how.serveOthers && lock !== null };
    const bundle = process.env.EDGEPLANE_SERVICE_BUNDLE === 'off' ? undefined : await serviceBundle({ entry: fileURLToPath(SERVICE) });
    // execArgv: [] — not the TypeScript loader this process may have: the bundle is JavaScript, and
    // without one the thread registers tsx itself (worker-entry.mjs).
    const worker = bundle
      ? new Worker(pathToFileURL(bundle), { workerData: { data }, execArgv: [] })
      : new Worker(ENTRY, { workerData: { module: SERVICE.href, data }, execArgv: [] });
    worker.once('exit', () => lock?.release());
    channel = new WorkerChannel(worker, 'the embedded service', (url) => lock?.setUrl(url));
  } catch (err) {
    lock?.release();
    throw err;
  }
  let closing: Promise<void> | undefined;
  // Named by the database it runs on: a plan saved against one is refused on the other.
  const database = process.env.DATABASE_URL;
  return {
    target: database ? `in-process:${redactDatabaseUrl(database)}` : `embedded:${dir}`,
    request: (method, path, body) => channel.request(method, path, body),
    readPages: (path, onPage) => channel.readPages(path, onPage),
    readsAhead: () => channel.usable,
    close: () => (closing ??= channel.close(true)),
  };
}
