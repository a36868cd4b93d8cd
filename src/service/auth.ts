import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../store/db.js';
import { newId } from '../util/ids.js';
import { rfc3339 } from '../util/time.js';
import { STACK_NAME } from '../contract/stack-name.js';

/**
 * What an API key may do (docs/api.md, "Scopes"), each a superset of the one before: `read` reads,
 * `write` also writes (objects, stack locks, sync runs and requests), `admin` is reserved for
 * admin routes (none in the API today: accounts and keys are CLI-only, on the database).
 */
export const SCOPES = ['read', 'write', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];
export const DEFAULT_SCOPE: Scope = 'write';

/** Whether a key of scope `has` may do what needs `needs`. */
export function scopeCovers(has: Scope, needs: Scope): boolean {
  return SCOPES.indexOf(has) >= SCOPES.indexOf(needs);
}

/** Methods that only read; every other one needs a write key unless the route says otherwise. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The scope a route needs: its `config.scope`, else `read` for GET/HEAD/OPTIONS and `write` for the others. */
export function neededScope(method: string, config: { scope?: Scope } | undefined): Scope {
  return config?.scope ?? (READ_METHODS.has(method) ? 'read' : 'write');
}

export function parseScope(value: string): Scope {
  if ((SCOPES as readonly string[]).includes(value)) return value as Scope;
  throw new Error(`--scope must be one of ${SCOPES.join(', ')}, not ${JSON.stringify(value.slice(0, 40))}`);
}

/**
 * `stacks`: the key may write only objects whose ownership marker names one of these stacks, and
 * take only their locks (docs/api.md, "Scopes"); absent: every stack.
 */
export interface Principal { accountId: string; abuseReports: boolean; keyId: string; scope: Scope; stacks?: string[] }

/** `--stacks a,b`: stack names, at most 100. */
export function parseStacks(value: string): string[] {
  const stacks = [...new Set(value.split(',').map((s) => s.trim()).filter(Boolean))];
  const bad = stacks.find((s) => !STACK_NAME.test(s));
  if (!stacks.length || bad !== undefined || stacks.length > 100) {
    throw new Error(`--stacks: stack names separated by commas (lower-case letters, digits, ".", "_" or "-"; at most 100)${bad !== undefined ? `, not ${JSON.stringify(bad.slice(0, 64))}` : ''}`);
  }
  return stacks;
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** A new API key: shown to the user once, stored only as its SHA-256 hash. */
function generateKey(): string {
  return 'ep_' + randomBytes(24).toString('base64url');
}

/**
 * Resolves Bearer keys to accounts. Successful look-ups are cached for `ttlMs` (default 5 s) so
 * an authenticated GET costs one query, not two; a revoked key therefore stops working within
 * `ttlMs` on every process. Unknown keys are never cached.
 */
export class Authenticator {
  private readonly cache = new Map<string, { principal: Principal; until: number }>();
  constructor(private readonly db: Db, private readonly ttlMs = 5000) {}

  /** The key's account when it was looked up less than the cache's lifetime ago (no query, no promise). */
  cached(key: string): Principal | undefined {
    const hit = this.cache.get(hashKey(key));
    return hit && hit.until > Date.now() ? hit.principal : undefined;
  }

  async resolve(key: string): Promise<Principal | null> {
    const hash = hashKey(key);
    const hit = this.cache.get(hash);
    const now = Date.now();
    if (hit && hit.until > now) return hit.principal;
    const { rows } = await this.db.query<{ id: string; account_id: string; abuse_reports: boolean; scope: Scope; stacks: string[] | null }>(
      `SELECT k.id, k.account_id, k.scope, k.stacks, a.abuse_reports FROM api_keys k JOIN accounts a ON a.id = k.account_id
       WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
      [hash],
    );
    if (!rows[0]) {
      this.cache.delete(hash);
      return null;
    }
    const principal: Principal = { accountId: rows[0].account_id, abuseReports: rows[0].abuse_reports, keyId: rows[0].id, scope: rows[0].scope };
    if (rows[0].stacks) principal.stacks = rows[0].stacks;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, { principal, until: now + this.ttlMs });
    return principal;
  }
}

// ——— operator functions (the `admin` CLI) ———

export interface IssuedKey { key_id: string; account_id: string; api_key: string; scope: Scope; stacks: string[] | null }

export async function createAccount(db: Db, opts: { name: string; abuseReports?: boolean; scope?: Scope }): Promise<IssuedKey> {
  const accountId = newId('acct');
  return db.tx(async (q) => {
    await q.query('INSERT INTO accounts (id, name, abuse_reports) VALUES ($1, $2, $3)', [accountId, opts.name, !!opts.abuseReports]);
    return insertKey(q, accountId, opts.scope ?? DEFAULT_SCOPE);
  });
}

export async function createKey(db: Db, accountId: string, scope: Scope = DEFAULT_SCOPE, stacks?: string[]): Promise<IssuedKey> {
  const { rows } = await db.query('SELECT 1 FROM accounts WHERE id = $1', [accountId]);
  if (!rows.length) throw new Error(`account ${accountId} does not exist`);
  return insertKey(db, accountId, scope, stacks);
}

async function insertKey(q: Pick<Db, 'query'>, accountId: string, scope: Scope, stacks?: string[]): Promise<IssuedKey> {
  const key = generateKey();
  const keyId = newId('key');
  await q.query('INSERT INTO api_keys (id, account_id, key_hash, scope, stacks) VALUES ($1, $2, $3, $4, $5)', [keyId, accountId, hashKey(key), scope, stacks?.length ? stacks : null]);
  return { key_id: keyId, account_id: accountId, api_key: key, scope, stacks: stacks?.length ? stacks : null };
}

export interface AccountInfo { id: string; name: string; abuse_reports: boolean; created_at: string; active_keys: number }

/** Every account, oldest first, with how many API keys it has that are not revoked. */
export async function listAccounts(db: Db): Promise<AccountInfo[]> {
  const { rows } = await db.query<{ id: string; name: string; abuse_reports: boolean; created_at: Date; active_keys: string | number }>(
    `SELECT a.id, a.name, a.abuse_reports, a.created_at,
            (SELECT count(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL) AS active_keys
       FROM accounts a ORDER BY a.created_at, a.id`,
  );
  return rows.map((r) => ({ id: r.id, name: r.name, abuse_reports: r.abuse_reports, created_at: rfc3339(r.created_at), active_keys: Number(r.active_keys) }));
}

export interface KeyInfo { id: string; scope: Scope; stacks: string[] | null; created_at: string; revoked_at: string | null }

/** An account's API keys, oldest first: ids and dates only (a key is stored as a hash, and never shown again). */
export async function listKeys(db: Db, accountId: string): Promise<KeyInfo[]> {
  const { rows: acct } = await db.query('SELECT 1 FROM accounts WHERE id = $1', [accountId]);
  if (!acct.length) throw new Error(`account ${accountId} does not exist`);
  const { rows } = await db.query<{ id: string; scope: Scope; stacks: string[] | null; created_at: Date; revoked_at: Date | null }>(
    'SELECT id, scope, stacks, created_at, revoked_at FROM api_keys WHERE account_id = $1 ORDER BY created_at, id', [accountId],
  );
  return rows.map((r) => ({ id: r.id, scope: r.scope, stacks: r.stacks, created_at: rfc3339(r.created_at), revoked_at: r.revoked_at ? rfc3339(r.revoked_at) : null }));
}

/** Revokes a key; false when no such active key exists. */
export async function revokeKey(db: Db, keyId: string): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [keyId]);
  return (rowCount ?? 0) > 0;
}

export async function setAbuseReports(db: Db, accountId: string, enabled: boolean): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE accounts SET abuse_reports = $2 WHERE id = $1', [accountId, enabled]);
  return (rowCount ?? 0) > 0;
}
