import type { KindRuntimeConfig } from '../kinds/types.js';
import type { AppOptions, ServerOptions } from '../service/app.js';
import { resolveVendorPrefix } from '../contract/vendor.js';
import { DEFAULT_RATE_LIMIT, type RateLimitOptions } from '../service/rate-limit.js';
import type { WorkerOptions } from '../service/job-worker.js';
import { DEFAULT_MAX_KEYS_PER_ACCOUNT, type IdempotencyOptions } from '../service/idempotency.js';

/** Service settings from the environment (documented in the README). */
export function serviceOptionsFromEnv(env = process.env): Pick<AppOptions, 'publicUrl' | 'versionHeaders' | 'vendorPrefix'> {
  return {
    publicUrl: env.EDGEPLANE_PUBLIC_URL || undefined,
    versionHeaders: env.EDGEPLANE_VERSION_HEADERS ? env.EDGEPLANE_VERSION_HEADERS.split(',') : undefined,
    vendorPrefix: env.EDGEPLANE_VENDOR_PREFIX || undefined,
  };
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
  return {
    enabled: env.EDGEPLANE_JOBS !== 'off',
    leaseMs: positiveInt(env, 'EDGEPLANE_JOB_LEASE_MS'),
    pollMs: positiveInt(env, 'EDGEPLANE_JOB_POLL_MS'),
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
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new Error('EDGEPLANE_REDIS_URL: must be a redis:// or rediss:// URL');
  return { perMinute, redisUrl };
}

function wholeNumber(env: NodeJS.ProcessEnv, name: string, dflt: number, unit: string, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name}: must be a whole number of ${unit} (at least ${min}), got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * How many `Idempotency-Key` responses each account keeps at most (docs/api.md):
 * EDGEPLANE_IDEMPOTENCY_KEYS, beyond which the oldest go first.
 */
export function idempotencyFromEnv(env = process.env): IdempotencyOptions {
  return { maxKeysPerAccount: wholeNumber(env, 'EDGEPLANE_IDEMPOTENCY_KEYS', DEFAULT_MAX_KEYS_PER_ACCOUNT, 'keys per account') };
}

/** `serve`'s connection limits and drain time (README, Operations), from the environment. */
export function serverOptionsFromEnv(env = process.env): Omit<ServerOptions, 'tls'> & { shutdownTimeoutMs: number } {
  const opts = {
    headersTimeoutMs: wholeNumber(env, 'EDGEPLANE_HEADERS_TIMEOUT_MS', 10_000, 'milliseconds'),
    requestTimeoutMs: wholeNumber(env, 'EDGEPLANE_REQUEST_TIMEOUT_MS', 30_000, 'milliseconds'),
    keepAliveTimeoutMs: wholeNumber(env, 'EDGEPLANE_KEEPALIVE_TIMEOUT_MS', 72_000, 'milliseconds'),
    maxConnections: wholeNumber(env, 'EDGEPLANE_MAX_CONNECTIONS', 1024, 'connections'),
    shutdownTimeoutMs: wholeNumber(env, 'EDGEPLANE_SHUTDOWN_TIMEOUT_MS', 25_000, 'milliseconds'),
  };
  if (opts.headersTimeoutMs > opts.requestTimeoutMs) {
    throw new Error(`EDGEPLANE_HEADERS_TIMEOUT_MS (${opts.headersTimeoutMs}) must not be longer than EDGEPLANE_REQUEST_TIMEOUT_MS (${opts.requestTimeoutMs}): the headers are part of the request`);
  }
  return opts;
}
