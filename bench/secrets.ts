/**
 * `npm run bench:secrets`: what sealing secrets at rest costs a create that carries one (issue 41: a
 * route create with a webhook secret ≤ 1.1× the same create before sealing). Two services in this
 * process on each engine (PGlite in memory; PostgreSQL too when DATABASE_URL is set), one with a key
 * ring (every secret sealed: AES-256-GCM, a data key per value) and one without (stored as given,
 * on a database without migration 015's trigger: as before sealing), each on a database of its own; requests go through `inject` (no socket).
 * Batches alternate between the two, so both see the same machine; the figures are the medians of
 * the process's CPU time and of the wall time per create, and their ratios.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/service/app.js';
import { createAccount } from '../src/service/auth.js';
import { KeyRing } from '../src/service/writes/sealing.js';
import { migrate } from '../src/store/migrate.js';
import { openPglite } from '../src/store/pglite.js';
import { openPostgres } from '../src/store/postgres.js';
import type { Db } from '../src/store/db.js';

const BATCH = 100;
const ROUNDS = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 7;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function engineDb(engine: string): Promise<{ db: Db; close: () => Promise<void> }> {
  if (engine === 'pglite') {
    const db = await openPglite(null);
    return { db, close: () => db.close() };
  }
  const schema = `bench_secrets_${randomBytes(4).toString('hex')}`;
  const db = await openPostgres(process.env.DATABASE_URL!, { schema, max: 4 });
  return { db, close: async () => { await db.query(`DROP SCHEMA ${schema} CASCADE`); await db.close(); } };
}

interface Side { app: FastifyInstance; headers: Record<string, string>; edge: string; routes: number; n: number; close: () => Promise<void> }

async function side(engine: string, sealed: boolean): Promise<Side> {
  const { db, close } = await engineDb(engine);
  await migrate(db);
  // Before sealing there was no trigger keeping `sealed_with` either (migration 015).
  if (!sealed) await db.query('DROP TRIGGER objects_sealed_with ON objects');
  const app = await buildApp({ db, logLevel: 'silent', metrics: 'off', openapi: false, secrets: sealed ? KeyRing.generate('bench').ring : undefined });
  await app.ready();
  const { api_key: key } = await createAccount(db, { name: 'bench' });
  const headers = { authorization: `Bearer ${key}`, 'service-version': '2', 'content-type': 'application/json' };
  return { app, headers, edge: '', routes: Infinity, n: 0, close: async () => { await app.close(); await close(); } };
}

/** Median-ready figures of one batch: CPU ms and wall ms per create. */
async function batch(s: Side): Promise<{ cpu: number; wall: number }> {
  // A new edge per batch (outside the measure): each holds a batch of routes.
  const edge = await s.app.inject({ method: 'POST', url: '/edges/https', headers: s.headers, payload: JSON.stringify({ hostports: [`b${randomBytes(6).toString('hex')}.example.com:443`] }) });
  if (edge.statusCode !== 201) throw new Error(`${edge.statusCode} ${edge.body}`);
  const edgeId = JSON.parse(edge.body).id as string;
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < BATCH; i++, s.n++) {
    const res = await s.app.inject({
      method: 'POST', url: `/edges/https/${edgeId}/routes`, headers: s.headers,
      payload: JSON.stringify({ match_type: 'path_prefix', match: `/r${s.n}`, webhook_verification: { provider: 'github', secret: `whsec_${randomBytes(16).toString('hex')}` } }),
    });
    if (res.statusCode !== 201) throw new Error(`${res.statusCode} ${res.body}`);
  }
  const wall = Number(process.hrtime.bigint() - t0) / 1e6 / BATCH;
  const c = process.cpuUsage(c0);
  return { cpu: (c.user + c.system) / 1000 / BATCH, wall };
}

async function run(engine: string): Promise<void> {
  const plain = await side(engine, false);
  const sealed = await side(engine, true);
  try {
    await batch(plain); await batch(sealed); // warm
    const p: { cpu: number; wall: number }[] = [];
    const s: { cpu: number; wall: number }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Which goes first alternates too.
      if (r % 2) { s.push(await batch(sealed)); p.push(await batch(plain)); } else { p.push(await batch(plain)); s.push(await batch(sealed)); }
    }
    const [pc, sc, pw, sw] = [median(p.map((x) => x.cpu)), median(s.map((x) => x.cpu)), median(p.map((x) => x.wall)), median(s.map((x) => x.wall))];
    console.log(`| ${engine} | ${pc.toFixed(3)} | ${sc.toFixed(3)} | **${(sc / pc).toFixed(2)}** | ${pw.toFixed(3)} | ${sw.toFixed(3)} | **${(sw / pw).toFixed(2)}** |`);
  } finally {
    await plain.close();
    await sealed.close();
  }
}

console.log(`\nbench:secrets — ${ROUNDS} rounds of ${BATCH} route creates with a webhook secret each way, medians per create; load average ${loadavg()[0].toFixed(2)}\n`);
console.log('| engine | plain, CPU ms | sealed, CPU ms | sealed / plain CPU (target ≤ 1.1) | plain, wall ms | sealed, wall ms | sealed / plain wall |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const engine of ['pglite', ...(process.env.DATABASE_URL ? ['postgresql'] : [])]) await run(engine);
