import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
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

/** A key's window: fixed, one minute from the key's first request in it. */
const WINDOW_MS = 60_000;

/** After a failed count, how long requests skip Redis altogether (a stalled Redis costs each of them nothing). */
const REDIS_BACKOFF_MS = 1000;

/**
 * With Redis, a key far from its limit (its count under half of it) is counted here and its
 * count sent to Redis in one command at most this often, not one round trip per request; past
 * half, or with a limit under `BATCHED_MIN_LIMIT`, every request is counted in Redis before it is
 * answered. A key may so pass its limit by what other replicas served it in their last batch.
 */
const BATCH_MS = 100;
const BATCHED_MIN_LIMIT = 100;

/** Where the counters live in Redis: one key per API key id (the key itself never leaves the database, even hashed). */
const REDIS_PREFIX = 'edgeplane:rate:';

/** Adds `n` to a window's count, starting the window (its expiry) with its first count: `[count, ms left]`. */
const INCR_LUA = `
local count = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {count, ttl}`;

/** A key's count in its window, as this process knows it. */
interface Window {
  /** Requests counted (in Redis: as it last answered, plus those sent and not yet answered, plus those not sent). */
  count: number;
  /** When the window ends (ms since the epoch). */
  resetAt: number;
  /** Redis only: requests counted here and not yet sent. */
  pending: number;
}

/**
 * Per-API-key request limits: fixed one-minute windows, counted per process or, with Redis, by
 * every replica together. An `onRequest` hook registered where authentication has already run
 * (its hooks run first), so it counts the caller's key id; a request without a valid key is
 * refused before it counts. Callback style, no promise: counted in memory, a request costs a map
 * lookup and three headers (`x-ratelimit-limit`, `-remaining`, `-reset`).
 *
 * With Redis, a replica that cannot reach it lets requests through (and says so in the log)
 * rather than refusing every request: the limit protects the service, Redis must not take it down.
 */
async function rateLimitPlugin(app: FastifyInstance, opts: RateLimitOptions & { health?: DegradedChecks }): Promise<void> {
  const max = opts.perMinute;
  if (max <= 0) return;
  const windows = new Map<string, Window>();
  const limit = String(max);
  // Windows that ended are dropped once a minute (one timer, not one per key or request).
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, w] of windows) if (w.resetAt <= now && w.pending === 0) windows.delete(key);
  }, WINDOW_MS).unref();
  const shared = opts.redisUrl ? redisCounts(app, opts.redisUrl, opts.redisTimeoutMs ?? DEFAULT_REDIS_TIMEOUT_MS, opts.health) : undefined;
  app.addHook('onClose', (_app, done) => {
    clearInterval(sweep);
    done();
  });

  /** The window of `key` now, started afresh if the last one ended. */
  const windowOf = (key: string, now: number): Window => {
    let w = windows.get(key);
    if (!w) windows.set(key, (w = { count: 0, resetAt: now + WINDOW_MS, pending: 0 }));
    else if (w.resetAt <= now) {
      w.count = w.pending = 0;
      w.resetAt = now + WINDOW_MS;
    }
    return w;
  };

  /** The headers, and the refusal past the limit (`counted` false: Redis did not answer, let through). */
  const answer = (reply: FastifyReply, w: Window, now: number, done: HookHandlerDoneFunction, counted = true) => {
    const reset = Math.max(0, Math.ceil((w.resetAt - now) / 1000));
    reply.header('x-ratelimit-limit', limit);
    if (w.count <= max || !counted) {
      reply.header('x-ratelimit-remaining', String(Math.max(0, max - w.count)));
      reply.header('x-ratelimit-reset', String(reset));
      return done();
    }
    const after = String(Math.max(1, reset));
    reply.header('x-ratelimit-remaining', '0');
    reply.header('x-ratelimit-reset', after);
    done(new ApiError('ERR_RATE_LIMITED', `this API key sent more than ${max} requests this minute; retry after ${after} s`, {}, { 'retry-after': after }));
  };

  app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const key = req.principal?.keyId;
    if (key === undefined) return done(); // refused by authentication before this hook
    const now = Date.now();
    const w = windowOf(key, now);
    if (!shared) {
      w.count++;
      return answer(reply, w, now, done);
    }
    if (max >= BATCHED_MIN_LIMIT && (w.count + 1) * 2 < max) {
      w.count++;
      w.pending++;
      shared.later(key, w);
      return answer(reply, w, now, done);
    }
    // Near the limit (or a small one): counted in Redis first, with what was counted here since the last batch.
    shared.now(key, w, (counted) => answer(reply, w, Date.now(), done, counted));
  });
}

/**
 * The counters in Redis, every call bounded: a Redis that refuses connections, or accepts them
 * and never answers (stalled, partitioned, SIGSTOP), costs a request at most `timeoutMs`, and then
 * nothing for a second (the request is let through uncounted: fail-open), with a warning in the
 * log at most once a minute, the `edgeplane_rate_limit_uncounted_total` metric, and `/readyz`
 * saying `degraded`. Nothing waits for Redis at start-up: the replica serves (uncounted) until
 * Redis answers.
 */
function redisCounts(app: FastifyInstance, url: string, timeoutMs: number, health: DegradedChecks | undefined) {
  const redis = new Redis(url, {
    // Fail at once while disconnected instead of queueing requests behind a reconnect.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    lazyConnect: true,
  });
  redis.defineCommand('edgeplaneRateIncr', { numberOfKeys: 1, lua: INCR_LUA });
  const incr = (redis as unknown as { edgeplaneRateIncr(key: string, n: number, windowMs: number): Promise<[number, number]> }).edgeplaneRateIncr.bind(redis);
  const uncounted = app.metrics?.rateLimitUncounted;
  let warned = 0;
  const warn = (err: Error) => {
    if (Date.now() - warned < 60_000) return;
    warned = Date.now();
    app.log.warn({ err: { message: err.message } }, `rate limit: Redis did not answer within ${timeoutMs} ms; requests are let through uncounted until it does`);
  };
  redis.on('error', warn);
  void redis.connect().catch(() => undefined);
  let batch: NodeJS.Timeout | undefined;
  app.addHook('onClose', async () => {
    clearTimeout(batch);
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

  let skipUntil = 0;
  const failed = (err: Error, requests: number) => {
    warn(err);
    uncounted?.inc(requests);
  };
  /**
   * Adds `n` requests to `key`'s count in Redis; `w` is told Redis's count and window end. Not
   * counted (Redis unavailable, or no answer in time): let through uncounted, and the `local` of
   * them that `w` counted already leave its count.
   */
  const send = (key: string, w: Window, n: number, local: number, then: (counted: boolean) => void) => {
    const notCounted = (err: Error) => {
      w.count = Math.max(0, w.count - local);
      failed(err, n);
      then(false);
    };
    if (Date.now() < skipUntil || redis.status !== 'ready') return notCounted(new Error('Redis unavailable'));
    incr(REDIS_PREFIX + key, n, WINDOW_MS).then(([count, ttl]) => {
      // Requests counted here since this was sent are not in Redis's count yet.
      w.count = count + w.pending;
      w.resetAt = Date.now() + ttl;
      then(true);
    }, (err: Error) => {
      skipUntil = Date.now() + REDIS_BACKOFF_MS;
      notCounted(err);
    });
  };

  // Keys with requests counted here and not yet sent; sent together every BATCH_MS.
  const due = new Map<string, Window>();
  const sent = () => {};
  const flush = () => {
    batch = undefined;
    for (const [key, w] of due) {
      const n = w.pending;
      w.pending = 0;
      if (n > 0) send(key, w, n, n, sent);
    }
    due.clear();
  };
  return {
    /** `key`'s request, already counted in `w`, goes to Redis with the next batch. */
    later(key: string, w: Window): void {
      if (!due.has(key)) due.set(key, w);
      batch ??= setTimeout(flush, BATCH_MS);
    },
    /** `key`'s request (not counted in `w`) goes to Redis now, with its requests not yet sent; `then(true)` once `w` has Redis's count. */
    now(key: string, w: Window, then: (counted: boolean) => void): void {
      const local = w.pending;
      w.pending = 0;
      send(key, w, local + 1, local, then);
    },
  };
}

export default fp(rateLimitPlugin, { name: 'edgeplane-rate-limit', fastify: '5.x' });
