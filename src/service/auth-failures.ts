import { ApiError } from '../contract/errors.js';

/** A client address's failed sign-ins in its window: fixed, one minute from its first failure. */
interface Window { count: number; resetAt: number }

const WINDOW_MS = 60_000;

/** Addresses tracked at once (about 100 bytes each): past this, a new address is not counted until a sweep frees room. */
export const MAX_TRACKED_ADDRESSES = 100_000;

/**
 * Failed authentications per client address (`serve`'s EDGEPLANE_AUTH_FAILURE_LIMIT): an API key
 * or a status page session token that names no live key or session costs the service a database
 * look-up, and no key's rate limit counts it (there is no key). Past `perMinute` failures in a
 * window, an address's requests that would need such a look-up are refused with 429 before it;
 * a request whose key was looked up recently (`Authenticator.cached`) is still served, so a user
 * sharing an address (a NAT, a proxy not trusted) with a client guessing keys keeps working.
 *
 * Counted per process: what it protects is this replica's database work. The address is the
 * socket's, or the client's as a trusted proxy names it (EDGEPLANE_TRUST_PROXY, fastify's
 * `trustProxy`); with an untrusted `X-Forwarded-For` a client could name any address.
 */
export class AuthFailureLimit {
  private readonly windows = new Map<string, Window>();
  private readonly sweep: NodeJS.Timeout;
  /** Requests refused by the limit, since the start (metrics: `edgeplane_auth_failures_refused_total`). */
  refused = 0;
  /** Failed authentications counted, since the start (metrics: `edgeplane_auth_failures_total`). */
  failures = 0;

  constructor(readonly perMinute: number, private readonly now: () => number = Date.now, private readonly maxAddresses = MAX_TRACKED_ADDRESSES) {
    // Windows that ended are dropped once a minute: one timer, not one per address.
    this.sweep = setInterval(() => this.dropEnded(), WINDOW_MS);
    this.sweep.unref();
  }

  /** The 429 for `address` when it is past its limit (counted as refused), else undefined. */
  refusal(address: string): ApiError | undefined {
    const w = this.windows.get(address);
    if (!w || w.count < this.perMinute) return undefined;
    const now = this.now();
    if (w.resetAt <= now) {
      this.windows.delete(address);
      return undefined;
    }
    this.refused++;
    const after = String(Math.max(1, Math.ceil((w.resetAt - now) / 1000)));
    return new ApiError('ERR_AUTH_FAILURES', `this address sent more than ${this.perMinute} unknown or revoked API keys or sessions this minute; retry after ${after} s`, {}, { 'retry-after': after });
  }

  /** Counts one failed authentication from `address`. */
  failed(address: string): void {
    this.failures++;
    const now = this.now();
    const w = this.windows.get(address);
    if (w && w.resetAt > now) {
      w.count++;
      return;
    }
    if (!w && this.windows.size >= this.maxAddresses) {
      this.dropEnded();
      if (this.windows.size >= this.maxAddresses) return;
    }
    this.windows.set(address, { count: 1, resetAt: now + WINDOW_MS });
  }

  /** Addresses counted now (tests, metrics). */
  get tracked(): number {
    return this.windows.size;
  }

  close(): void {
    clearInterval(this.sweep);
  }

  private dropEnded(): void {
    const now = this.now();
    for (const [address, w] of this.windows) if (w.resetAt <= now) this.windows.delete(address);
  }
}
