import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import { ApiError } from '../contract/errors.js';

import { DEFAULT_RATE_LIMIT } from './defaults.js';

export { DEFAULT_RATE_LIMIT };

export interface RateLimitOptions {
  /** Requests per minute per API key; 0 switches rate limiting off. */
  perMinute: number;
  /** Counters in this Redis (`redis://…`), shared by every replica using it; per process without it. */
  redisUrl?: string;
}

/** Where the counters live in Redis: one key per API key id and window (the key itself never leaves the database, even hashed). */
const REDIS_PREFIX = 'edgeplane:rate:';

/**
 * Per-API-key request limits (@fastify/rate-limit, fixed one-minute windows). Registered where
 * authentication has already run (its hooks attach to the routes registered after it, and run
 * after the scope's own `onRequest` hooks), so the key it counts is the caller's key id; a
 * request without a valid key is refused before it counts.
 *
 * With Redis, a replica that cannot reach it lets requests through (and says so in the log)
 * rather than refusing every request: the limit protects the service, Redis must not take it down.
 */
async function rateLimitPlugin(app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  if (opts.perMinute <= 0) return;
  let redis: Redis | undefined;
  if (opts.redisUrl) {
    redis = new Redis(opts.redisUrl, {
      // Fail fast while disconnected instead of queueing requests behind a reconnect.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      lazyConnect: true,
    });
    let warned = 0;
    redis.on('error', (err: Error) => {
      if (Date.now() - warned < 60_000) return;
      warned = Date.now();
      app.log.warn({ err: { message: err.message } }, 'rate limit: Redis unreachable; requests are not counted until it is back');
    });
    // The first requests after start-up are counted too: connected before the server listens.
    await redis.connect().catch(() => undefined);
    app.addHook('onClose', async () => {
      await redis!.quit().catch(() => redis!.disconnect());
    });
  }
  await app.register(rateLimit, {
    global: true,
    max: opts.perMinute,
    timeWindow: 60_000,
    hook: 'onRequest',
    ...(redis ? { redis, nameSpace: REDIS_PREFIX } : {}),
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

export default fp(rateLimitPlugin, { name: 'edgeplane-rate-limit', fastify: '5.x' });
