import { buildApp, type AppOptions } from '../service/app.js';
import type { Db } from '../store/db.js';
import { ensureCredentials } from './embedded-credentials.js';
import { injectTransport, type Transport } from './transport.js';

export { credentialsPath, readCredentials, type EmbeddedCredentials } from './embedded-credentials.js';

/**
 * The embedded service as a transport, on this thread: the real fastify app over `db`, called
 * in-process. On first use it provisions an account and key and keeps them in
 * `<stateDir>/embedded.json`. Closing the transport closes the app and the database. What the
 * one-off commands use: nothing to start beyond the engine itself (`watch` runs the service on a
 * thread of its own: embedded-thread.ts).
 */
export async function embeddedTransport(db: Db, stateDir: string, appOptions: Partial<AppOptions> = {}): Promise<Transport> {
  const app = await buildApp({ db, ...appOptions });
  await app.ready();
  const creds = await ensureCredentials(db, stateDir);
  return injectTransport(app, creds.api_key, `embedded:${stateDir}`, async () => {
    await app.close();
    await db.close();
  });
}
