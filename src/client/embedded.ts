import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildApp, type AppOptions } from '../service/app.js';
import { Authenticator, createAccount } from '../service/auth.js';
import type { Db } from '../store/db.js';
import { injectTransport, type Transport } from './transport.js';

/** The account and key the CLI provisions for itself in an embedded state directory. */
export interface EmbeddedCredentials { account_id: string; api_key: string; key_id: string }

export function credentialsPath(stateDir: string): string {
  return join(stateDir, 'embedded.json');
}

export function readCredentials(stateDir: string): EmbeddedCredentials | undefined {
  const path = credentialsPath(stateDir);
  if (!existsSync(path)) return undefined;
  try {
    const c = JSON.parse(readFileSync(path, 'utf8')) as EmbeddedCredentials;
    return typeof c.api_key === 'string' ? c : undefined;
  } catch {
    return undefined;
  }
}

/** The remembered key if the database still knows it, else a new account and key, remembered. */
async function ensureCredentials(db: Db, stateDir: string): Promise<EmbeddedCredentials> {
  const known = readCredentials(stateDir);
  if (known && (await new Authenticator(db).resolve(known.api_key))) return known;
  const issued = await createAccount(db, { name: 'embedded' });
  mkdirSync(stateDir, { recursive: true });
  writeFileSync(credentialsPath(stateDir), JSON.stringify(issued, null, 2) + '\n', { mode: 0o600 });
  return issued;
}

/**
 * The embedded service as a transport: the real fastify app over `db`, called in-process. On
 * first use it provisions an account and key and keeps them in `<stateDir>/embedded.json`.
 * Closing the transport closes the app and the database.
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
