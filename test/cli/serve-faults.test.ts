import { mkdtempSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, startServe, type Served } from '../helpers/cli.js';
import { TestClient } from '../helpers/service.js';

/**
 * `serve` under faults and attack (issue 42): each test runs real `serve` processes and attacks
 * them over real sockets, with small caps set through the environment so that it takes seconds.
 */

async function stateWithKey(): Promise<{ state: string; key: string }> {
  const state = mkdtempSync(join(tmpdir(), 'ep-faults-'));
  const created = await runCli(['admin', 'accounts', 'create', '--name', 'faults', '--json', '--state', state]);
  expect(created.code, created.stderr).toBe(0);
  return { state, key: JSON.parse(created.stdout).api_key };
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A TCP server that accepts connections and never answers (a stalled Redis); closed after the test. */
async function stalledServer(): Promise<{ port: number; accepted: () => number }> {
  const sockets: Socket[] = [];
  const server: Server = createServer((s) => { sockets.push(s); s.on('error', () => {}); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => { for (const s of sockets) s.destroy(); return new Promise((r) => server.close(r)); });
  return { port: (server.address() as { port: number }).port, accepted: () => sockets.length };
}

async function timed<T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await f();
  return { value, ms: Date.now() - started };
}

function stopAfter(served: Served) {
  cleanups.push(async () => { if (served.child.exitCode === null) await served.stop(); });
}

/** A TCP proxy to the real Redis that can be made to stall (pass nothing either way, as a partition or SIGSTOP). */
async function stallableRedis(): Promise<{ port: number; stall: () => void }> {
  let stalled = false;
  const sockets: Socket[] = [];
  const server = createServer((client) => {
    const upstream = connect(6379, '127.0.0.1');
    sockets.push(client, upstream);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      from.on('data', (d) => { if (!stalled) to.write(d); });
      from.on('error', () => {});
      from.on('close', () => to.destroy());
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => { for (const s of sockets) s.destroy(); return new Promise((r) => server.close(r)); });
  return { port: (server.address() as { port: number }).port, stall: () => { stalled = true; } };
}

async function redisAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(6379, '127.0.0.1', () => s.write('PING\r\n'));
    s.setTimeout(1000, () => { s.destroy(); resolve(false); });
    s.on('data', (d) => { s.destroy(); resolve(String(d).startsWith('+PONG')); });
    s.on('error', () => resolve(false));
  });
}
const HAVE_REDIS = await redisAnswers();

describe('a stalled Redis (accepts connections, never answers)', () => {
  it('does not stop a replica starting, GETs answer in < 1 s uncounted, and /readyz says degraded', async () => {
    const { state, key } = await stateWithKey();
    const redis = await stalledServer();
    const { value: served, ms: startMs } = await timed(() => startServe(['--state', state], { env: { EDGEPLANE_REDIS_URL: `redis://127.0.0.1:${redis.port}`, EDGEPLANE_RATE_LIMIT: '3' } }));
    stopAfter(served);
    expect(startMs).toBeLessThan(10_000);
    const c = new TestClient(served.url, key);
    // Past the limit of 3: every request is let through, none counted, none waiting on Redis.
    for (let i = 0; i < 6; i++) {
      const { value: res, ms } = await timed(() => c.get('/certificate_authorities'));
      expect(res.status).toBe(200);
      expect(ms).toBeLessThan(1000);
    }
    expect(redis.accepted()).toBeGreaterThan(0);
    const ready = await fetch(`${served.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'degraded', reason: expect.stringContaining("the rate limit's Redis did not answer within 100 ms") });
    const metrics = await (await fetch(`${served.url}/metrics`)).text();
    expect(Number(/^edgeplane_rate_limit_uncounted_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(6);
    expect(served.logs()).toContain('rate limit: Redis did not answer within 100 ms');
    expect(await served.stop()).toBe(0);
  }, 60_000);

  it.runIf(HAVE_REDIS)('that stalls while in use: requests go on in < 1 s, uncounted, and /readyz says degraded', async () => {
    const { state, key } = await stateWithKey();
    const redis = await stallableRedis();
    const served = await startServe(['--state', state], { env: { EDGEPLANE_REDIS_URL: `redis://127.0.0.1:${redis.port}`, EDGEPLANE_RATE_LIMIT: '1000' } });
    stopAfter(served);
    const c = new TestClient(served.url, key);
    // Counted in Redis while it answers.
    let counted = false;
    for (let i = 0; i < 50 && !counted; i++) {
      const res = await c.get('/certificate_authorities');
      counted = Number(res.headers.get('x-ratelimit-remaining') ?? 1000) < 1000;
      if (!counted) await new Promise((r) => setTimeout(r, 50));
    }
    expect(counted).toBe(true);
    expect(await (await fetch(`${served.url}/readyz`)).json()).toMatchObject({ status: 'ready' });
    redis.stall();
    for (let i = 0; i < 5; i++) {
      const { value: res, ms } = await timed(() => c.get('/certificate_authorities'));
      expect(res.status).toBe(200);
      expect(ms).toBeLessThan(1000);
    }
    expect(await (await fetch(`${served.url}/readyz`)).json()).toMatchObject({ status: 'degraded' });
    // The drain does not wait on the stalled Redis either.
    const { value: code, ms } = await timed(() => served.stop());
    expect(code).toBe(0);
    expect(ms).toBeLessThan(3000);
  }, 60_000);
});
