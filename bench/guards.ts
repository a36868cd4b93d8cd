/**
 * `npm run bench:guards`: what the rate-limit hook and the connection guards cost GET throughput
 * (issue #42: ≤ 5 %). Services in this process on one database (PGlite; PostgreSQL too with
 * DATABASE_URL), on real sockets:
 * - bare: no rate limit, Node's connection defaults;
 * - guarded, rate limit in process: as `serve` runs by default (the rate-limit hook with its
 *   in-process store, per-address and global connection caps, drain tracking, timeouts);
 * - guarded, rate limit in Redis: the same, counted in Redis with its deadline and breaker (as
 *   `serve` with EDGEPLANE_REDIS_URL).
 * The load comes from a child process (keep-alive connections, each sending its next GET when the
 * last is answered), so the client's work is not counted here. It loads one service per slice;
 * a round is one slice of each service, in an order that rotates, so the services of a round see
 * the same machine. A variant's figure is its ratio to bare within each round, reported as the
 * median and the quartiles over the rounds: for requests per second, and for this process's CPU
 * time per request (the steadier one on a shared machine: it does not count the time the process
 * waits for a core, and on one core a request's CPU time is what bounds the throughput). Then a
 * keyed client's GET throughput with `/metrics` on the API port, alone and while a client with no
 * key scrapes it 30 times a second (≥ 50 %). Needs Redis at EDGEPLANE_TEST_REDIS_URL (default
 * redis://127.0.0.1:6379).
 *
 *   npm run bench:guards [-- --rounds 20 --slice-ms 1000 --connections 10 --no-scrapes]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import type { FastifyInstance } from 'fastify';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) || fallback : fallback;
};
const ROUNDS = arg('rounds', 20);
const SLICE_MS = arg('slice-ms', 1000);
const CONNECTIONS = arg('connections', 10);

interface Slice { url: string; headers: Record<string, string>; ms: number }

// The load generator: the same file, forked. Runs each slice it is sent and answers its counts.
if (process.argv.includes('--loadgen')) {
  process.on('message', async (slice: Slice) => {
    const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
    const { hostname, port, pathname } = new URL(slice.url);
    let ok = 0;
    let failed = 0;
    const until = Date.now() + slice.ms;
    const get = () => new Promise<void>((resolve) => {
      request({ host: hostname, port, path: pathname, agent, headers: slice.headers }, (res) => {
        if (res.statusCode === 200) ok++;
        else failed++;
        res.resume();
        res.on('end', resolve);
      }).on('error', () => { failed++; resolve(); }).end();
    });
    await Promise.all(Array.from({ length: CONNECTIONS }, async () => { while (Date.now() < until) await get(); }));
    agent.destroy();
    process.send!({ ok, failed });
  });
} else {
  await main();
}

async function main(): Promise<void> {
  const { buildApp } = await import('../src/service/app.js');
  const { createAccount } = await import('../src/service/auth.js');
  const { migrate } = await import('../src/store/migrate.js');
  const { openPglite } = await import('../src/store/pglite.js');
  const { openPostgres } = await import('../src/store/postgres.js');
  type Db = Awaited<ReturnType<typeof openPglite>>;

  const REDIS_URL = process.env.EDGEPLANE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const quantile = (xs: number[], q: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
  const median = (xs: number[]) => quantile(xs, 0.5);
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
  const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

  /** `serve`'s defaults (src/cli/service-config.ts). */
  const SERVE_LIMITS = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 72_000, maxConnections: 1024, maxConnectionsPerAddress: 256, maxWaitingConnectionsPerAddress: 64, connectionReserve: 128, tlsHandshakeTimeoutMs: 5000 };
  const PER_MINUTE = 1_000_000_000;

  const child: ChildProcess = fork(process.argv[1], ['--loadgen', '--connections', String(CONNECTIONS)], { execArgv: process.execArgv, stdio: 'inherit' });
  /** One slice of load on `url`: requests per second, and this process's CPU time per request (µs). */
  const slice = (url: string, headers: Record<string, string>, ms = SLICE_MS) => new Promise<{ rps: number; cpuUs: number }>((resolve, reject) => {
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    child.once('message', ({ ok, failed }: { ok: number; failed: number }) => {
      const cpu = process.cpuUsage(cpu0);
      const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
      if (failed) return reject(new Error(`${url}: ${failed} requests failed`));
      resolve({ rps: ok / wallS, cpuUs: (cpu.user + cpu.system) / ok });
    });
    child.send({ url, headers, ms } satisfies Slice);
  });

  async function engineDb(engine: string): Promise<{ db: Db; close: () => Promise<void> }> {
    if (engine === 'pglite') {
      const db = await openPglite(null);
      return { db, close: () => db.close() };
    }
    const schema = `bench_guards_${randomBytes(4).toString('hex')}`;
    const db = await openPostgres(process.env.DATABASE_URL!, { schema, max: 8 });
    return { db: db as unknown as Db, close: async () => { await db.query(`DROP SCHEMA ${schema} CASCADE`); await db.close(); } };
  }

  async function listening(app: FastifyInstance): Promise<string> {
    await app.listen({ port: 0, host: '127.0.0.1' });
    return `http://127.0.0.1:${(app.server.address() as { port: number }).port}/certificate_authorities`;
  }

  async function guards(engine: string): Promise<void> {
    const { db, close } = await engineDb(engine);
    await migrate(db);
    const { api_key: key } = await createAccount(db, { name: 'bench' });
    const headers = { authorization: `Bearer ${key}`, 'service-version': '2' };
    const base = { db, logLevel: 'silent', metrics: 'off', openapi: false } as const;
    const variants = [
      { name: 'bare', app: await buildApp(base) },
      { name: 'guarded, rate limit in process', app: await buildApp({ ...base, rateLimit: { perMinute: PER_MINUTE }, server: SERVE_LIMITS }) },
      { name: 'guarded, rate limit in Redis', app: await buildApp({ ...base, rateLimit: { perMinute: PER_MINUTE, redisUrl: REDIS_URL, redisTimeoutMs: 100 }, server: SERVE_LIMITS }) },
    ];
    const urls = await Promise.all(variants.map((v) => listening(v.app)));
    const before = load();
    for (const url of urls) await slice(url, headers, 2000); // warm
    const rounds: Array<Array<{ rps: number; cpuUs: number }>> = [];
    for (let r = 0; r < ROUNDS; r++) {
      const round: Array<{ rps: number; cpuUs: number }> = [];
      for (let k = 0; k < variants.length; k++) {
        const i = (k + r) % variants.length;
        round[i] = await slice(urls[i], headers);
      }
      rounds.push(round);
    }
    console.log(`\n${engine}: ${ROUNDS} rounds of ${SLICE_MS} ms per service, ${CONNECTIONS} connections; load average ${before} before, ${load()} after`);
    console.log(`  bare: ${median(rounds.map((r) => r[0].rps)).toFixed(0)} req/s, ${median(rounds.map((r) => r[0].cpuUs)).toFixed(0)} µs CPU per request (medians)`);
    const spread = (xs: number[]) => `median ${pct(median(xs))}, quartiles ${pct(quantile(xs, 0.25))} … ${pct(quantile(xs, 0.75))}`;
    for (let i = 1; i < variants.length; i++) {
      // Each round: the variant's cost against bare in the same round.
      const cpuCost = rounds.map((r) => r[i].cpuUs / r[0].cpuUs - 1);
      const rpsCost = rounds.map((r) => 1 - r[i].rps / r[0].rps);
      console.log(`  ${variants[i].name}: ${median(rounds.map((r) => r[i].rps)).toFixed(0)} req/s, ${median(rounds.map((r) => r[i].cpuUs)).toFixed(0)} µs CPU per request`);
      console.log(`    CPU per request vs bare:  ${spread(cpuCost)}   (target ≤ +5.0 %)`);
      console.log(`    throughput lost vs bare:  ${spread(rpsCost)}`);
    }
    for (const v of variants) await v.app.close();
    await close();
  }

  /** A keyed client alone, and while a client with no key scrapes `/metrics` 30 times a second (each waits for the one before). */
  async function scrapes(): Promise<void> {
    const { db, close } = await engineDb('pglite');
    await migrate(db);
    const { api_key: key } = await createAccount(db, { name: 'bench' });
    const app = await buildApp({ db, logLevel: 'silent', metrics: 'route', openapi: false });
    const url = await listening(app);
    const { port } = new URL(url);
    const scraping = () => {
      let on = true;
      const scrape = () => new Promise<void>((resolve) => {
        request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => { res.resume(); res.on('end', resolve); }).on('error', () => resolve()).end();
      });
      const done = (async () => { while (on) await Promise.all([scrape(), new Promise((r) => setTimeout(r, 1000 / 30))]); })();
      return () => { on = false; return done; };
    };
    const headers = { authorization: `Bearer ${key}`, 'service-version': '2' };
    await slice(url, headers, 2000);
    const kept: number[] = [];
    for (let r = 0; r < Math.min(ROUNDS, 7); r++) {
      const alone = await slice(url, headers, 2000);
      const stop = scraping();
      const loaded = await slice(url, headers, 2000);
      await stop();
      kept.push(loaded.rps / alone.rps);
    }
    console.log(`\nkeyed client under 30 scrapes/s of /metrics (pglite, load average ${load()}): keeps median ${(median(kept) * 100).toFixed(0)} % of its throughput (rounds ${(Math.min(...kept) * 100).toFixed(0)}–${(Math.max(...kept) * 100).toFixed(0)} %; target ≥ 50 %)`);
    await app.close();
    await close();
  }

  try {
    for (const engine of ['pglite', ...(process.env.DATABASE_URL ? ['postgresql'] : [])]) await guards(engine);
    if (!process.argv.includes('--no-scrapes')) await scrapes();
  } finally {
    child.kill();
  }
}
