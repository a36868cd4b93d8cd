import { join, resolve } from 'node:path';
import type { AppOptions } from '../service/app.js';
import { DirLock } from '../store/dir-lock.js';
import { writeTemplateInto } from '../store/pglite-template.js';
import type { EmbeddedServiceInput } from './embedded-service.js';
import type { Transport } from '../client/transport.js';
import { databaseUrl, redactDatabaseUrl } from '../util/database-url.js';
import { WorkerChannel } from '../client/worker-channel.js';
import { siblingModule, startWorker } from '../util/worker.js';
import { engineTier, takeSpare } from './spare.js';

export { credentialsPath, readCredentials, type EmbeddedCredentials } from './embedded-credentials.js';


/**
 * The embedded service as a transport: the real fastify app on the engine in `stateDir` (PGlite,
 * or PostgreSQL when DATABASE_URL is set), on a thread of its own (`embedded-service.ts`), where
 * it answers requests and reads lists ahead while the caller's thread plans. On first use it
 * provisions an account and key and keeps them in `<stateDir>/embedded.json`.
 *
 * The thread runs the compiled service of the installed package, with no loader; run from the
 * sources (tests, the dev loop) it registers tsx first (`startWorker`).
 *
 * The directory's lock is taken here, on the calling thread, before anything starts: a directory
 * another process holds fails at once with `LockHeldError`. The transport is returned while the
 * service starts, so the caller reads its manifests meanwhile; requests wait for it, and fail with
 * its reason if it cannot start. Closing the transport closes the app and the engine, ends the
 * thread and releases the lock.
 */
export async function embeddedTransport(stateDir: string, appOptions: Partial<AppOptions> = {}, how: { serveOthers?: boolean; /** the command only reads (see `openPglite`) */ readsOnly?: boolean } = {}): Promise<Transport> {
  const dir = resolve(stateDir);
  const database = databaseUrl();
  // A command that runs once (the long-running holders, watch and agent, serve others) takes the
  // thread the CLI started ahead, if it did (spare.ts), and the directory it claimed, if it did.
  const taken = how.serveOthers ? undefined : takeSpare(dir);
  const claim = database ? undefined : taken?.claim;
  const lock = database ? null : claim?.lock ?? DirLock.acquire(dir);
  let channel: WorkerChannel;
  try {
    // A long-lived holder (watch) also serves the directory to other commands, on loopback: they
    // find its URL in the lock, as they find `serve`'s, and talk to it with the directory's key.
    const data: EmbeddedServiceInput = { stateDir: dir, locked: lock !== null, appOptions, listen: !!how.serveOthers && lock !== null, readsOnly: !!how.readsOnly && !how.serveOthers };
    const spare = taken?.worker;
    // A new directory's database is written out from the template here, while the spare thread
    // still boots and loads the engine (it would write it itself, after those), before it is told
    // the directory: one thread writes it. A claimed directory's was written as the CLI started.
    if (lock && spare && !claim) {
      try {
        await writeTemplateInto(join(dir, 'pgdata'));
      } catch (err) {
        void spare.terminate();
        throw err;
      }
    }
    const worker = spare ?? startWorker(siblingModule(import.meta.url, 'embedded-service'), { workerData: { data, liftoffOnly: engineTier.liftoffOnly } });
    spare?.postMessage({ data });
    worker.once('exit', () => lock?.release());
    channel = new WorkerChannel(worker, 'the embedded service', (url) => lock?.setUrl(url));
  } catch (err) {
    lock?.release();
    throw err;
  }
  let closing: Promise<void> | undefined;
  // Named by the database it runs on: a plan saved against one is refused on the other.
  return {
    target: database ? `in-process:${redactDatabaseUrl(database)}` : `embedded:${dir}`,
    request: (method, path, body, headers) => channel.request(method, path, body, headers),
    readPages: (path, onPage) => channel.readPages(path, onPage),
    readsAhead: () => channel.usable,
    // Released once the engine is closed, not when the thread has ended: the directory may be opened again at once.
    close: () => (closing ??= channel.close(true).then(() => lock?.release())),
  };
}
