import { headerSafeUrl, withoutCredentials } from '../util/shown-url.js';
import type { KindRuntimeConfig } from '../kinds/types.js';
import type { AppOptions, ServerOptions } from '../service/app.js';
import { resolveVendorPrefix } from '../contract/vendor.js';
import type { RateLimitOptions } from '../service/rate-limit.js';
import { isIP } from 'node:net';
import { DEFAULT_AUTH_FAILURE_LIMIT, DEFAULT_MAX_BYTES_PER_ACCOUNT, DEFAULT_MAX_KEYS_PER_ACCOUNT, DEFAULT_RATE_LIMIT, DEFAULT_REDIS_TIMEOUT_MS } from '../service/defaults.js';
import type { WorkerOptions } from '../service/job-worker.js';
import type { IdempotencyOptions } from '../service/writes/idempotency.js';

/** pino's levels: what `--log-level` / EDGEPLANE_LOG_LEVEL takes. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function logLevelOf(raw: string | undefined): string {
  const level = raw === undefined || raw === '' ? 'info' : raw;
  if (!LOG_LEVELS.includes(level)) throw new Error(`--log-level (EDGEPLANE_LOG_LEVEL): must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level.slice(0, 50))}`);
  return level;
}

/** Service settings from the environment (documented in the README); a value the service could not use is refused by name. */
export function serviceOptionsFromEnv(env = process.env): Pick<AppOptions, 'publicUrl' | 'versionHeaders' | 'vendorPrefix'> {
  return {
    publicUrl: publicUrlOf(env.EDGEPLANE_PUBLIC_URL),
    versionHeaders: versionHeadersOf(env.EDGEPLANE_VERSION_HEADERS),
    vendorPrefix: env.EDGEPLANE_VENDOR_PREFIX || undefined,
  };
}

/** Every `uri` starts with it: an http(s) URL with no query or fragment (a path is kept: a proxy's prefix). */
function publicUrlOf(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  let u: URL | undefined;
  try { u = new URL(raw); } catch { /* below */ }
  if (!u || !/^https?:$/.test(u.protocol) || u.search || u.hash || u.username || u.password) {
    throw new Error(`EDGEPLANE_PUBLIC_URL: must be an http:// or https:// URL with no query, fragment or credentials (every uri starts with it), got ${JSON.stringify(withoutCredentials(raw).slice(0, 200))}`);
  }
  // As the service uses it (the `admin users` records too): an international one in its ASCII form.
  return headerSafeUrl(raw);
}

/** Header names, comma-separated: each an HTTP token (RFC 9110), at least one. */
function versionHeadersOf(raw: string | undefined): string[] | undefined {
  if (!raw) return undefined;
  const names = raw.split(',').map((h) => h.trim());
  if (!names.length || names.some((h) => !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(h))) {
    throw new Error(`EDGEPLANE_VERSION_HEADERS: must be header names separated by commas (such as Service-Version,Ngrok-Version), got ${JSON.stringify(raw.slice(0, 200))}`);
  }
  return names;
}

/**
 * The deployment settings the reconciler's defaults depend on (the session cookie prefix), from
 * the same environment the service reads: `plan`, `apply`, `watch` and `export` must all read
 * defaults as the service fills them, or an object that leaves one out differs on every run.
 */
export function reconcilerConfig(env = process.env): KindRuntimeConfig {
  return { vendorPrefix: resolveVendorPrefix(serviceOptionsFromEnv(env)) };
}

function positiveInt(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name}: must be a whole number of milliseconds, got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * Job worker settings (documented in docs/abuse-reports.md): EDGEPLANE_JOB_LEASE_MS (how long a
 * claimed job is reserved before another process may take it over), EDGEPLANE_JOB_POLL_MS,
 * EDGEPLANE_JOB_DELAY_MS (slows every job down; for crash-recovery tests), EDGEPLANE_JOBS=off (this
 * process runs no worker).
 */
export function workerOptionsFromEnv(env = process.env): (Pick<WorkerOptions, 'leaseMs' | 'pollMs' | 'delayMs'> & { enabled: boolean }) {
  const jobs = env.EDGEPLANE_JOBS;
  // A typo (`of`) must not leave the worker on unnoticed.
  if (jobs !== undefined && jobs !== '' && jobs !== 'on' && jobs !== 'off') throw new Error(`EDGEPLANE_JOBS: must be on or off, got ${JSON.stringify(jobs.slice(0, 50))}`);
  const pollMs = positiveInt(env, 'EDGEPLANE_JOB_POLL_MS');
  // 0 polled without a pause: hundreds of transactions a second for an idle queue.
  if (pollMs === 0) throw new Error('EDGEPLANE_JOB_POLL_MS: must be at least 1 millisecond, got "0"');
  return {
    enabled: jobs !== 'off',
    leaseMs: positiveInt(env, 'EDGEPLANE_JOB_LEASE_MS'),
    pollMs,
    delayMs: positiveInt(env, 'EDGEPLANE_JOB_DELAY_MS'),
  };
}

/**
 * `serve`'s rate limit (docs/api.md): EDGEPLANE_RATE_LIMIT requests per minute per API key
 * (0: none), counted in EDGEPLANE_REDIS_URL when set (shared by every replica), else per process.
 */
export function rateLimitFromEnv(env = process.env): RateLimitOptions {
  const raw = env.EDGEPLANE_RATE_LIMIT;
  let perMinute = DEFAULT_RATE_LIMIT;
  if (raw !== undefined && raw !== '') {
    perMinute = Number(raw);
    if (!Number.isInteger(perMinute) || perMinute < 0) throw new Error(`EDGEPLANE_RATE_LIMIT: must be a whole number of requests per minute (0: no limit), got ${JSON.stringify(raw)}`);
  }
  const redisUrl = env.EDGEPLANE_REDIS_URL || undefined;
  if (redisUrl) {
    let u: URL | undefined;
    try { u = new URL(redisUrl); } catch { /* below */ }
    // ioredis reads the path as the database number: anything else failed after the server had started.
    if (!u || !/^rediss?:$/.test(u.protocol) || !u.hostname || !/^(\/\d*)?$/.test(u.pathname)) {
      throw new Error('EDGEPLANE_REDIS_URL: must be a redis:// or rediss:// URL: redis://[user:password@]host[:port][/database number]');
    }
  }
  return { perMinute, redisUrl, redisTimeoutMs: wholeNumber(env, 'EDGEPLANE_REDIS_TIMEOUT_MS', DEFAULT_REDIS_TIMEOUT_MS, 'milliseconds') };
}

function wholeNumber(env: NodeJS.ProcessEnv, name: string, dflt: number, unit: string, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name}: must be a whole number of ${unit} (at least ${min}), got ${JSON.stringify(raw)}`);
  return n;
}

/** Unknown or revoked API keys per minute per client address (docs/operations.md, Rate limits): EDGEPLANE_AUTH_FAILURE_LIMIT, 0 for none. */
export function authFailureLimitFromEnv(env = process.env): number {
  return wholeNumber(env, 'EDGEPLANE_AUTH_FAILURE_LIMIT', DEFAULT_AUTH_FAILURE_LIMIT, 'failures per minute (0: no limit)', 0);
}

/** proxy-addr's names for ranges, as fastify's `trustProxy` takes them. */
const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * EDGEPLANE_TRUST_PROXY: the proxies whose `X-Forwarded-For` names the client, as fastify's
 * `trustProxy` takes them: how many hops (a whole number), or addresses and CIDR ranges separated
 * by commas. `true` (trust any) is refused: a client could then name any address it likes.
 */
export function trustProxyFromEnv(env = process.env): string | number | undefined {
  const raw = env.EDGEPLANE_TRUST_PROXY?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops < 1 || hops > 100) throw new Error(`EDGEPLANE_TRUST_PROXY: a number of proxies must be from 1 to 100, got ${raw}`);
    return hops;
  }
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of items) {
    const [address, prefix, ...rest] = item.split('/');
    const family = isIP(address);
    const ok = PROXY_RANGES.has(item) || (family !== 0 && rest.length === 0 && (prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128))));
    if (!ok) {
      throw new Error(`EDGEPLANE_TRUST_PROXY: ${JSON.stringify(item.slice(0, 60))} is not an address, a CIDR range (10.0.0.0/8) or one of ${[...PROXY_RANGES].join(', ')}; give the proxies' addresses separated by commas, or how many proxies are in front (1)`);
    }
  }
  return items.join(',');
}

/**
 * How many `Idempotency-Key` responses each account keeps at most (docs/api.md):
 * EDGEPLANE_IDEMPOTENCY_KEYS keys and EDGEPLANE_IDEMPOTENCY_MIB mebibytes, beyond which the oldest go first.
 */
export function idempotencyFromEnv(env = process.env): IdempotencyOptions {
  return {
    maxKeysPerAccount: wholeNumber(env, 'EDGEPLANE_IDEMPOTENCY_KEYS', DEFAULT_MAX_KEYS_PER_ACCOUNT, 'keys per account'),
    maxBytesPerAccount: wholeNumber(env, 'EDGEPLANE_IDEMPOTENCY_MIB', DEFAULT_MAX_BYTES_PER_ACCOUNT / 1024 / 1024, 'MiB per account') * 1024 * 1024,
  };
}

/** `serve`'s connection limits and drain time (README, Operations), from the environment. */
export function serverOptionsFromEnv(env = process.env): Omit<ServerOptions, 'tls'> & { shutdownTimeoutMs: number } {
  const opts = {
    headersTimeoutMs: wholeNumber(env, 'EDGEPLANE_HEADERS_TIMEOUT_MS', 10_000, 'milliseconds'),
    requestTimeoutMs: wholeNumber(env, 'EDGEPLANE_REQUEST_TIMEOUT_MS', 30_000, 'milliseconds'),
    keepAliveTimeoutMs: wholeNumber(env, 'EDGEPLANE_KEEPALIVE_TIMEOUT_MS', 72_000, 'milliseconds'),
    maxConnections: wholeNumber(env, 'EDGEPLANE_MAX_CONNECTIONS', 1024, 'connections'),
    maxConnectionsPerAddress: wholeNumber(env, 'EDGEPLANE_MAX_CONNECTIONS_PER_ADDRESS', 256, 'connections (0: no per-address limit)', 0),
    maxWaitingConnectionsPerAddress: wholeNumber(env, 'EDGEPLANE_MAX_WAITING_CONNECTIONS_PER_ADDRESS', 64, 'connections (0: no such limit)', 0),
    connectionReserve: 0,
    tlsHandshakeTimeoutMs: wholeNumber(env, 'EDGEPLANE_TLS_HANDSHAKE_TIMEOUT_MS', 5_000, 'milliseconds'),
    shutdownTimeoutMs: wholeNumber(env, 'EDGEPLANE_SHUTDOWN_TIMEOUT_MS', 25_000, 'milliseconds'),
    trustProxy: trustProxyFromEnv(env),
  };
  // The last eighth of the slots, unless set: room for clients holding few connections.
  opts.connectionReserve = wholeNumber(env, 'EDGEPLANE_CONNECTION_RESERVE', Math.floor(opts.maxConnections / 8), 'connections (0: no reserve)', 0);
  if (opts.connectionReserve >= opts.maxConnections) {
    throw new Error(`EDGEPLANE_CONNECTION_RESERVE (${opts.connectionReserve}) must be less than EDGEPLANE_MAX_CONNECTIONS (${opts.maxConnections})`);
  }
  if (opts.headersTimeoutMs > opts.requestTimeoutMs) {
    throw new Error(`EDGEPLANE_HEADERS_TIMEOUT_MS (${opts.headersTimeoutMs}) must not be longer than EDGEPLANE_REQUEST_TIMEOUT_MS (${opts.requestTimeoutMs}): the headers are part of the request`);
  }
  return opts;
}
