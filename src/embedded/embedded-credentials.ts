import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Authenticator, createAccount, createKey } from '../service/auth.js';
import type { Db } from '../store/db.js';
import { redactDatabaseUrl } from '../util/database-url.js';

/** The account and key the CLI provisions for itself in an embedded state directory. */
export interface EmbeddedCredentials { account_id: string; api_key: string; key_id: string }

/**
 * Where a state directory keeps the CLI's key: `embedded.json` for its own PGlite database; with
 * DATABASE_URL, a file per PostgreSQL database (`embedded-<hash>.json`, from the URL without its
 * password), so moving between the two, or between databases, neither overwrites the other's key
 * nor makes a new one each time.
 */
export function credentialsPath(stateDir: string, databaseUrl?: string): string {
  if (!databaseUrl) return join(stateDir, 'embedded.json');
  return join(stateDir, `embedded-${createHash('sha256').update(redactDatabaseUrl(databaseUrl)).digest('hex').slice(0, 12)}.json`);
}

export function readCredentials(stateDir: string, databaseUrl?: string): EmbeddedCredentials | undefined {
  const path = credentialsPath(stateDir, databaseUrl);
  if (!existsSync(path)) return undefined;
  try {
    const c = JSON.parse(readFileSync(path, 'utf8')) as EmbeddedCredentials;
    return typeof c.api_key === 'string' ? c : undefined;
  } catch {
    return undefined;
  }
}

/** The name of the account the CLI provisions in a state directory. */
export const EMBEDDED_ACCOUNT = 'embedded';

/**
 * The remembered key if the database still knows it. Otherwise a new key, remembered — for the
 * directory's own account when it has one: the account the file names, else the oldest account
 * named "embedded". A revoked key, or `embedded.json` deleted, corrupt or restored from elsewhere,
 * so keeps the objects the directory holds: a new account would see none of them, and the next
 * plan would create them all again beside the old ones. Only a directory with no such account
 * gets a new one.
 */
export async function ensureCredentials(db: Db, stateDir: string | null, databaseUrl?: string): Promise<EmbeddedCredentials> {
  // No directory: a database in memory, new and empty, whose key dies with it.
  if (stateDir === null) return createAccount(db, { name: EMBEDDED_ACCOUNT });
  const known = readCredentials(stateDir, databaseUrl);
  if (known && (await new Authenticator(db).resolve(known.api_key))) return known;
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM accounts WHERE id = $1 OR name = $2 ORDER BY (id = $1) DESC, created_at, id LIMIT 1`,
    [typeof known?.account_id === 'string' ? known.account_id : '', EMBEDDED_ACCOUNT],
  );
  const issued = rows.length ? await createKey(db, rows[0].id) : await createAccount(db, { name: EMBEDDED_ACCOUNT });
  mkdirSync(stateDir, { recursive: true });
  writeFileSync(credentialsPath(stateDir, databaseUrl), JSON.stringify(issued, null, 2) + '\n', { mode: 0o600 });
  return issued;
}
