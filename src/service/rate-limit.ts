import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import { ApiError } from '../contract/errors.js';
import type { DegradedChecks } from './health.js';

import { DEFAULT_RATE_LIMIT, DEFAULT_REDIS_TIMEOUT_MS } from './defaults.js';

export { DEFAULT_RATE_LIMIT };

export interface RateLimitOptions {
  /** Requests per minute per API key; 0 switches rate limiting off. */
  perMinute: number;
  /** Counters in this Redis (`redis://…`), shared by every replica using it; per process without it. */
  redisUrl?: string;
  /** The longest a Redis command or connect may take before the request goes on uncounted; default 100 ms. */
  redisTimeoutMs?: number;
}

/** After a failed count, how long requests skip Redis altogether (a stalled Redis costs each of them nothing). */
const REDIS_BACKOFF_MS = 1000;

/** Where the counters live in Redis: one key per API key id and window (the key itself never leaves the database, even hashed). */
const REDIS_PREFIX = 'edgeplane:rate:';

const require = createRequire(import.meta.url);

/**
 * Per-API-key request limits (@fastify/rate-limit, fixed one-minute windows). Registered where
 * authentication has already run (its hooks attach to the routes registered after it, and run
 * after the scope's own `onRequest` hooks), so the key it counts is the caller's key id; a
 * request without a valid key is refused before it counts.
 *
 * With Redis, a replica that cannot reach it lets requests through (and says so in the log)
 * rather than refusing every request: the limit protects the service, Redis must not take it down.
 */
async function rateLimitPlugin(app: FastifyInstance, opts: RateLimitOptions & { health?: DegradedChecks }): Promise<void> {
  if (opts.perMinute <= 0) return;
  const store = opts.redisUrl ? redisStore(app, opts.redisUrl, opts.redisTimeoutMs ?? DEFAULT_REDIS_TIMEOUT_MS, opts.health) : undefined;
  await app.register(rateLimit, {
    global: true,
    max: opts.perMinute,
    timeWindow: 60_000,
    hook: 'onRequest',
    ...(store ? { store } : {}),
    skipOnError: true,
    keyGenerator: (req: FastifyRequest) => req.principal?.keyId ?? `ip:${req.ip}`,
    errorResponseBuilder: (_req, ctx) => new ApiError(
      'ERR_RATE_LIMITED',
      `this API key sent more than ${ctx.max} requests this minute; retry after ${Math.max(1, Math.ceil(ctx.ttl / 1000))} s`,
      {},
      { 'retry-after': String(Math.max(1, Math.ceil(ctx.ttl / 1000))) },
    ),
  });
}

type Incr = (key: string, cb: (err: Error | null, res?: { current: number; ttl: number }) => void, timeWindow: number, max: number) => void;

/**
 * The counters in Redis, every call bounded: a Redis that refuses connections, or accepts them
 * and never answers (stalled, partitioned, SIGSTOP), costs a request at most `timeoutMs`, and then
 * nothing for a second (the request is let through uncounted: fail-open), with a warning in the
 * log at most once a minute, the `edgeplane_rate_limit_uncounted_total` metric, and `/readyz`
 * saying `degraded`. Nothing waits for Redis at start-up: the replica serves (uncounted) until
 * Redis answers.
 */
function redisStore(app: FastifyInstance, url: string, timeoutMs: number, health: DegradedChecks | undefined) {
  const redis = new Redis(url, {
    // Fail at once while disconnected instead of queueing requests behind a reconnect.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    lazyConnect: true,
  });
  const uncounted = app.metrics?.rateLimitUncounted;
  let warned = 0;
  const warn = (err: Error) => {
    if (Date.now() - warned < 60_000) return;
    warned = Date.now();
    app.log.warn({ err: { message: err.message } }, `rate limit: Redis did not answer within ${timeoutMs} ms; requests are let through uncounted until it does`);
  };
  redis.on('error', warn);
  void redis.connect().catch(() => undefined);
  app.addHook('onClose', async () => {
    await redis.quit().catch(() => redis.disconnect());
  });
  health?.add(async () => {
    try {
      await redis.ping();
      return null;
    } catch {
      return `the rate limit's Redis did not answer within ${timeoutMs} ms: requests are let through uncounted`;
    }
  });

  // @fastify/rate-limit's own Redis store (its Lua script), behind a breaker.
  const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as new (continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key: string) => { incr: Incr };
  const inner = new RedisStore(false, false, redis, REDIS_PREFIX);
  let skipUntil = 0;
  return class BoundedRedisStore {
    incr(key: string, cb: Parameters<Incr>[1], timeWindow: number, max: number): void {
      const failed = (err: Error) => {
        warn(err);
        uncounted?.inc();
        cb(err);
      };
      if (Date.now() < skipUntil || redis.status !== 'ready') {
        failed(new Error('Redis unavailable'));
        return;
      }
      inner.incr(key, (err, res) => {
        if (err) {
          skipUntil = Date.now() + REDIS_BACKOFF_MS;
          failed(err);
        } else cb(null, res ?? undefined);
      }, timeWindow, max);
    }

    child(): BoundedRedisStore {
      return this;
    }
  };
}

export default fp(rateLimitPlugin, { name: 'edgeplane-rate-limit', fastify: '5.x' });
