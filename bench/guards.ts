/**
 * `npm run bench:guards`: what the rate-limit hook (counted in Redis, with its deadline and
 * breaker) and the connection guards (per-address cap, drain tracking, TLS-less HTTP) cost GET
 * throughput (issue #42: ≤ 5 %). Two services in this process on one PGlite database, on real
 * sockets: one bare, one as `serve` runs it. Rounds alternate between them (same machine, same
 * run); the figure is the ratio of the median requests per second. Then a keyed client's GET
 * throughput with `/metrics` on the API port, alone and under 30 scrapes/s (≥ 50 %). Needs Redis at
 * EDGEPLANE_TEST_REDIS_URL (default redis://127.0.0.1:6379).
 */
import { loadavg } from 'node:os';
import { Agent, request } from 'node:http';
import { buildApp } from '../src/service/app.js';
import { createAccount } from '../src/service/auth.js';
import { migrate } from '../src/store/migrate.js';
import { openPglite } from '../src/store/pglite.js';

const ROUNDS = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 5;
const ROUND_MS = 2000;
const CONCURRENCY = 8;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const db = await openPglite(null);
await migrate(db);
const { api_key: key } = await createAccount(db, { name: 'bench' });
const bare = await buildApp({ db, logLevel: 'silent', metrics: 'off', openapi: false });
const guarded = await buildApp({
  db, logLevel: 'silent', metrics: 'off', openapi: false,
  rateLimit: { perMinute: 1_000_000_000, redisUrl: process.env.EDGEPLANE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', redisTimeoutMs: 100 },
  server: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 72_000, maxConnections: 1024, maxConnectionsPerAddress: 256, maxWaitingConnectionsPerAddress: 64, connectionReserve: 128, tlsHandshakeTimeoutMs: 5000 },
});
// With metrics served on the API port: a keyed client alone against the same with 30 scrapes/s (issue #42: ≥ 50 %).
const scraped = await buildApp({ db, logLevel: 'silent', metrics: 'route', openapi: false });
const ports: number[] = [];
for (const app of [bare, guarded, scraped]) {
  await app.listen({ port: 0, host: '127.0.0.1' });
  ports.push((app.server.address() as { port: number }).port);
}

async function rps(port: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const until = Date.now() + ROUND_MS;
  let n = 0;
  const get = () => new Promise<void>((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/certificate_authorities', agent, headers: { authorization: `Bearer ${key}`, 'service-version': '2' } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      res.resume();
      res.on('end', resolve);
    }).on('error', reject).end();
  });
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => { while (Date.now() < until) { await get(); n++; } }));
  agent.destroy();
  return n / (ROUND_MS / 1000);
}

await rps(ports[0]);
await rps(ports[1]);
const figures: [number[], number[]] = [[], []];
for (let r = 0; r < ROUNDS; r++) for (const i of r % 2 ? [1, 0] : [0, 1]) figures[i].push(await rps(ports[i]));
const [b, g] = figures.map(median);

/** 30 scrapes a second of `/metrics` (each waits for the one before), from a client with no key, until stopped. */
function scraping(port: number): () => Promise<void> {
  let on = true;
  const scrape = () => new Promise<void>((resolve) => {
    request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => { res.resume(); res.on('end', resolve); }).on('error', () => resolve()).end();
  });
  const done = (async () => { while (on) await Promise.all([scrape(), new Promise((r) => setTimeout(r, 1000 / 30))]); })();
  return () => { on = false; return done; };
}
await rps(ports[2]);
const alone: number[] = [];
const loaded: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  alone.push(await rps(ports[2]));
  const stop = scraping(ports[2]);
  loaded.push(await rps(ports[2]));
  await stop();
}
const [a, l] = [median(alone), median(loaded)];
console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
console.log(`bare ${b.toFixed(0)} req/s, rate limit (Redis) + connection guards ${g.toFixed(0)} req/s: ${((1 - g / b) * 100).toFixed(1)} % less`);
console.log(`keyed client alone ${a.toFixed(0)} req/s, with 30 scrapes/s of /metrics ${l.toFixed(0)} req/s: ${((l / a) * 100).toFixed(0)} % of its throughput`);
await bare.close();
await guarded.close();
await scraped.close();
await db.close();
