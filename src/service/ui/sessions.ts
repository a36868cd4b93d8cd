import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../store/db.js';
import { hashKey, type Authenticator, type Scope } from '../auth.js';

/** Who a page is for: the account of the key the browser signed in with, and that key's scope (any scope signs in; Sync now needs write). */
export interface UiSession { accountId: string; keyId: string; scope: Scope; stacks?: string[]; csrf: string; expiresAt: Date }

/** How long a sign-in lasts. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/**
 * The status page's sessions. A session is a random token in an `HttpOnly` cookie; the database
 * keeps only its SHA-256 (as it does API keys), the account, the key it was opened with and a
 * CSRF token for the page's forms. A look-up is trusted for `ttlMs`, the API keys' own cache
 * bound: a revoked key's sessions stop working within the same time as the key itself.
 */
export class UiSessions {
  private readonly cache = new Map<string, { session: UiSession; until: number }>();
  constructor(private readonly db: Db, private readonly auth: Authenticator, private readonly ttlMs = 5000) {}

  /** Opens a session for an API key; null when the key is unknown or revoked. */
  async open(apiKey: string): Promise<{ token: string; session: UiSession } | null> {
    const principal = await this.auth.resolve(apiKey);
    if (!principal) return null;
    const token = randomBytes(32).toString('base64url');
    const csrf = randomBytes(24).toString('base64url');
    const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
    // Expired rows of every account go with each sign-in, a bounded batch at a time.
    await this.db.query('DELETE FROM ui_sessions WHERE token_hash IN (SELECT token_hash FROM ui_sessions WHERE expires_at < now() LIMIT 100)');
    await this.db.query(
      'INSERT INTO ui_sessions (token_hash, account_id, key_id, csrf, expires_at) VALUES ($1, $2, $3, $4, $5)',
      [hashKey(token), principal.accountId, principal.keyId, csrf, expiresAt],
    );
    return { token, session: { accountId: principal.accountId, keyId: principal.keyId, scope: principal.scope, ...(principal.stacks ? { stacks: principal.stacks } : {}), csrf, expiresAt } };
  }

  /** The token's session when it was looked up in the last seconds (no query). */
  cached(token: string): UiSession | undefined {
    const hit = this.cache.get(hashKey(token));
    const now = Date.now();
    return hit && hit.until > now && hit.session.expiresAt.getTime() > now ? hit.session : undefined;
  }

  /** The live session of a cookie's token, or null (unknown, expired, signed out, or its key revoked). */
  async resolve(token: string | undefined): Promise<UiSession | null> {
    if (!token || token.length > 100) return null;
    const hash = hashKey(token);
    const now = Date.now();
    const hit = this.cache.get(hash);
    if (hit && hit.until > now && hit.session.expiresAt.getTime() > now) return hit.session;
    const { rows } = await this.db.query<{ account_id: string; key_id: string; scope: Scope; stacks: string[] | null; csrf: string; expires_at: Date }>(
      `SELECT s.account_id, s.key_id, k.scope, k.stacks, s.csrf, s.expires_at FROM ui_sessions s JOIN api_keys k ON k.id = s.key_id
        WHERE s.token_hash = $1 AND s.expires_at > now() AND k.revoked_at IS NULL`,
      [hash],
    );
    const row = rows[0];
    if (!row) {
      this.cache.delete(hash);
      return null;
    }
    const session: UiSession = { accountId: row.account_id, keyId: row.key_id, scope: row.scope, csrf: row.csrf, expiresAt: new Date(row.expires_at) };
    if (row.stacks) session.stacks = row.stacks;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, { session, until: now + this.ttlMs });
    return session;
  }

  /** Ends a session (sign-out); at once on this replica, and on every replica at its next look-up. */
  async close(token: string | undefined): Promise<void> {
    if (!token || token.length > 100) return;
    const hash = hashKey(token);
    this.cache.delete(hash);
    await this.db.query('DELETE FROM ui_sessions WHERE token_hash = $1', [hash]);
  }
}

/** Whether a form's CSRF token is the session's (in constant time). */
export function csrfMatches(session: UiSession, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(session.csrf);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
