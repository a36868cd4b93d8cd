import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Authenticator, createAccount } from '../service/auth.js';
import type { Db } from '../store/db.js';

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
export async function ensureCredentials(db: Db, stateDir: string): Promise<EmbeddedCredentials> {
  const known = readCredentials(stateDir);
  if (known && (await new Authenticator(db).resolve(known.api_key))) return known;
  const issued = await createAccount(db, { name: 'embedded' });
  mkdirSync(stateDir, { recursive: true });
  writeFileSync(credentialsPath(stateDir), JSON.stringify(issued, null, 2) + '\n', { mode: 0o600 });
  return issued;
}
