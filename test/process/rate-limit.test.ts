import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { createKey } from '../../src/service/auth.js';
import { openPostgres } from '../../src/store/postgres.js';
import { runCli, startServe } from '../helpers/cli.js';
import { ENGINES, startTestService, TestClient, type TestService } from '../helpers/service.js';

const REDIS_URL = process.env.EDGEPLANE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const REQUIRE_REDIS = !!process.env.EDGEPLANE_REQUIRE_REDIS;

async function redisReachable(): Promise<boolean> {
  const r = new Redis(REDIS_URL, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}
const HAVE_REDIS = await redisReachable();
if (REQUIRE_REDIS && !HAVE_REDIS) throw new Error(`EDGEPLANE_REQUIRE_REDIS is set but Redis does not answer at ${REDIS_URL}: the shared rate limit test would be skipped`);

describe.each(ENGINES)('rate limit per API key (%s)', (engine) => {
  let svc: TestService;
  beforeAll(async () => { svc = await startTestService(engine, { rateLimit: { perMinute: 5 } }); });
  afterAll(async () => { await svc?.close(); });

  it('answers 429 ERR_RATE_LIMITED with Retry-After past the limit, per key, in the API error shape', async () => {
    const c = await svc.account();
    for (let i = 0; i < 5; i++) {
      const res = await c.get('/certificate_authorities');
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(4 - i));
    }
    const over = await c.get('/certificate_authorities');
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ error_code: 'ERR_RATE_LIMITED', status_code: 429, details: { operation_id: over.headers.get('operation-id') } });
    expect(over.body.msg).toContain('5 requests');
    const after = Number(over.headers.get('retry-after'));
    expect(after).toBeGreaterThanOrEqual(1);
    expect(after).toBeLessThanOrEqual(60);
    // Every path counts, writes too.
    expect((await c.post('/backends/failover', { backends: [] })).status).toBe(429);

    // Another key of the same account has a limit of its own, as has another account.
    const second = await createKey(svc.db, c.accountId);
    expect((await new TestClient(svc.url, second.api_key).get('/certificate_authorities')).status).toBe(200);
    expect((await (await svc.account()).get('/certificate_authorities')).status).toBe(200);
  });

  it('starts a new window a minute after the first request of the last one', async () => {
    const c = await svc.account();
    // Only the clock is faked: the server's sockets and timers run as usual.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      for (let i = 0; i < 5; i++) expect((await c.get('/certificate_authorities')).status).toBe(200);
      vi.setSystemTime(Date.now() + 30_000);
      const over = await c.get('/certificate_authorities');
      expect(over.status).toBe(429);
      expect(Number(over.headers.get('retry-after'))).toBe(30);
      vi.setSystemTime(Date.now() + 30_000);
      const next = await c.get('/certificate_authorities');
      expect(next.status).toBe(200);
      expect(next.headers.get('x-ratelimit-remaining')).toBe('4');
      expect(next.headers.get('x-ratelimit-reset')).toBe('60');
    } finally {
      vi.useRealTimers();
    }
  });

  it('does not count requests refused for a missing or unknown key', async () => {
    const c = await svc.account();
    const stranger = new TestClient(svc.url, 'ep_' + 'x'.repeat(32));
    for (let i = 0; i < 8; i++) expect((await stranger.get('/certificate_authorities')).status).toBe(401);
    expect((await c.get('/certificate_authorities')).status).toBe(200);
  });
});

describe('unknown API keys on serve (EDGEPLANE_AUTH_FAILURE_LIMIT, EDGEPLANE_TRUST_PROXY)', () => {
  it('refuses an address past its unknown keys with 429 ERR_AUTH_FAILURES, serves a key it used, counts both in /metrics; a bad proxy setting stops serve by name', async () => {
    const state = mkdtempSync(join(tmpdir(), 'ep-authfail-'));
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'af', '--json', '--state', state]);
    expect(created.code, created.stderr).toBe(0);
    const { api_key } = JSON.parse(created.stdout) as { api_key: string };
    const served = await startServe(['--state', state], { env: { EDGEPLANE_AUTH_FAILURE_LIMIT: '2', EDGEPLANE_TRUST_PROXY: '10.0.0.0/8' } });
    try {
      const user = new TestClient(served.url, api_key);
      expect((await user.get('/certificate_authorities')).status).toBe(200);
      const stranger = (n: number) => new TestClient(served.url, `ep_guess_${n}`).get('/certificate_authorities');
      expect((await stranger(1)).status).toBe(401);
      expect((await stranger(2)).status).toBe(401);
      const refused = await stranger(3);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ error_code: 'ERR_AUTH_FAILURES' });
      expect((await user.get('/certificate_authorities')).status).toBe(200);
      const scrape = await (await fetch(`${served.url}/metrics`)).text();
      expect(scrape).toMatch(/^edgeplane_auth_failures_total 2$/m);
      expect(scrape).toMatch(/^edgeplane_auth_failures_refused_total 1$/m);
    } finally {
      expect(await served.stop()).toBe(0);
    }
    const bad = await runCli(['serve', '--port', '0', '--state', state], { env: { EDGEPLANE_TRUST_PROXY: 'true' } });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/EDGEPLANE_TRUST_PROXY: "true" is not an address/);
  }, 60_000);
});

describe('rate limit with its Redis unreachable', () => {
  it('lets requests through, at once, rather than refusing them or waiting for Redis', async () => {
    // A port nothing listens on: every count fails.
    const svc = await startTestService('pglite', { rateLimit: { perMinute: 2, redisUrl: 'redis://127.0.0.1:9' } });
    try {
      const c = await svc.account();
      const started = Date.now();
      for (let i = 0; i < 5; i++) expect((await c.get('/certificate_authorities')).status).toBe(200);
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await svc.close();
    }
  });
});

describe.runIf(!!process.env.DATABASE_URL && (HAVE_REDIS || REQUIRE_REDIS))('rate limit shared through Redis', () => {
  it('two serve processes on one database count one key together: in batches far from the limit, each request near it', async () => {
    const schema = 'ep_rl_' + Math.random().toString(36).slice(2, 10);
    const admin = await openPostgres(process.env.DATABASE_URL!, { schema });
    const url = `${process.env.DATABASE_URL}${process.env.DATABASE_URL!.includes('?') ? '&' : '?'}options=-c%20search_path%3D${schema}`;
    // This test is about counting, not the deadline: on a loaded machine a Redis reply can take more
    // than the default 100 ms, and the replica then lets the request through uncounted (fail-open).
    const env = { DATABASE_URL: url, EDGEPLANE_RATE_LIMIT: '100', EDGEPLANE_REDIS_URL: REDIS_URL, EDGEPLANE_JOBS: 'off', EDGEPLANE_REDIS_TIMEOUT_MS: '5000' };
    const redis = new Redis(REDIS_URL);
    try {
      const created = await runCli(['admin', 'accounts', 'create', '--name', 'rl', '--json'], { env: { DATABASE_URL: url } });
      expect(created.code).toBe(0);
      const { api_key, key_id } = JSON.parse(created.stdout);
      const [a, b] = await Promise.all([startServe([], { env }), startServe([], { env })]);
      try {
        const ca = new TestClient(a.url, api_key);
        const cb = new TestClient(b.url, api_key);
        // A replica serves before its Redis connection is up (uncounted until then): wait until
        // both say ready, not degraded.
        for (const s of [a, b]) {
          const end = Date.now() + 20_000;
          while ((await (await fetch(`${s.url}/readyz`)).json() as { status: string }).status !== 'ready') {
            if (Date.now() > end) throw new Error(`${s.url} never connected to Redis`);
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        // 40 + 40 requests, under half the limit: counted in each process and sent to Redis in
        // batches (every 100 ms), so Redis has them all soon after.
        for (let i = 0; i < 40; i++) {
          expect((await ca.get('/certificate_authorities')).status).toBe(200);
          expect((await cb.get('/certificate_authorities')).status).toBe(200);
        }
        await expect.poll(async () => Number(await redis.get(`edgeplane:rate:${key_id}`)), { timeout: 5000 }).toBe(80);
        // Past half the limit each request is counted in Redis before it is answered: 20 more in
        // all, then both refuse (each process alone would allow 100).
        let served = 0;
        for (let i = 0; i < 10; i++) {
          for (const c of [ca, cb]) if ((await c.get('/certificate_authorities')).status === 200) served++;
        }
        expect(served).toBe(20);
        const overA = await ca.get('/certificate_authorities');
        const overB = await cb.get('/certificate_authorities');
        expect([overA.status, overB.status]).toEqual([429, 429]);
        expect(overB.body.error_code).toBe('ERR_RATE_LIMITED');
        expect(Number(overB.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(overA.headers.get('x-ratelimit-remaining')).toBe('0');

        // Redis holds a counter named by the key's id; the key itself, and its hash, appear nowhere.
        const keys = await redis.keys('edgeplane:rate:*');
        expect(keys).toContain(`edgeplane:rate:${key_id}`);
        const { createHash } = await import('node:crypto');
        const hash = createHash('sha256').update(api_key).digest('hex');
        for (const k of keys) {
          expect(k).not.toContain(api_key);
          expect(k).not.toContain(hash);
        }
        expect(Number(await redis.get(`edgeplane:rate:${key_id}`))).toBe(102);
      } finally {
        expect(await a.stop()).toBe(0);
        expect(await b.stop()).toBe(0);
      }
    } finally {
      redis.disconnect();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.close();
    }
  }, 120_000);
});
