/**
 * `npm run bench:keyed-create`: what an Idempotency-Key costs a create on the service (issue #35:
 * a keyed create ≤ 1.3× an unkeyed one). The service runs in this process on each engine (PGlite in
 * memory; PostgreSQL too when DATABASE_URL is set), requests go through `inject` (no socket), and
 * the process's CPU time is read around each request. Unkeyed and keyed requests alternate one by
 * one, so both see the same machine from one moment to the next; each round of `PAIRS` pairs gives
 * a ratio (keyed CPU / unkeyed CPU), and the figure is the median of the rounds' ratios, with their
 * quartiles beside it (a batch-against-batch median swung by ±0.2 on a shared 2-core machine).
 * Failover backends with no references: the write path itself (version, marker, idempotency
 * record), not the checks of a kind. On PostgreSQL the database's own CPU is also read around each
 * request when its server runs on this machine (the bench's connections, by application name, in
 * /proc), outside the service's reading: what the keyed statements cost there.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { buildApp } from '../src/service/app.js';
import { createAccount } from '../src/service/auth.js';
import { migrate } from '../src/store/migrate.js';
import { openPglite } from '../src/store/pglite.js';
import { openPostgres } from '../src/store/postgres.js';
import type { Db } from '../src/store/db.js';

/** Pairs (one unkeyed create, one keyed) per round. */
const PAIRS = 100;
const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const ROUNDS = Number(arg('--rounds')) || 5;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];
const median = (xs: number[]) => quantile(xs, 0.5);

async function engineDb(engine: string): Promise<{ db: Db; close: () => Promise<void> }> {
  if (engine === 'pglite') {
    const db = await openPglite(null);
    return { db, close: () => db.close() };
  }
  const schema = `bench_keyed_${randomBytes(4).toString('hex')}`;
  // The connections' name (node-postgres reads PGAPPNAME), so their server processes can be found.
  process.env.PGAPPNAME = schema;
  const db = await openPostgres(process.env.DATABASE_URL!, { schema, max: 4 });
  return { db, close: async () => { await db.query(`DROP SCHEMA ${schema} CASCADE`); await db.close(); } };
}

async function run(engine: string): Promise<void> {
  const { db, close } = await engineDb(engine);
  try {
    await migrate(db);
    const app = await buildApp({ db, logLevel: 'silent', metrics: 'off', openapi: false });
    await app.ready();
    const { api_key: key } = await createAccount(db, { name: 'bench' });
    const headers = { authorization: `Bearer ${key}`, 'service-version': '2', 'content-type': 'application/json' };
    let n = 0;
    // The bench's PostgreSQL server processes (none: PGlite, or the server is not on this machine).
    let pids: number[] = [];
    const findPids = async () => {
      if (engine === 'pglite') return;
      const { rows } = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [process.env.PGAPPNAME]);
      pids = rows.map((r) => r.pid).filter((pid) => { try { readFileSync(`/proc/${pid}/schedstat`); return true; } catch { return false; } });
    };
    /** Their CPU time in ms (NaN when one of them ended: the pool closed an idle connection; the round's server figure is then left out). */
    const serverCpu = () => {
      try {
        return pids.reduce((sum, pid) => sum + Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6, 0);
      } catch {
        return NaN;
      }
    };
    /** One create: this process's CPU ms and the server's. */
    const create = async (keyed: boolean): Promise<[number, number]> => {
      const payload = JSON.stringify({ description: `pool ${n}`, backends: ['bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs'] });
      const h = keyed ? { ...headers, 'idempotency-key': `bench-${n}` } : headers;
      n++;
      const s0 = serverCpu();
      const c0 = process.cpuUsage();
      const res = await app.inject({ method: 'POST', url: '/backends/failover', headers: h, payload });
      const c = process.cpuUsage(c0);
      const s1 = serverCpu();
      if (res.statusCode !== 201) throw new Error(`${res.statusCode} ${res.body}`);
      return [(c.user + c.system) / 1000, s1 - s0];
    };
    const round = async () => {
      await findPids();
      const sum = { plain: 0, keyed: 0, plainDb: 0, keyedDb: 0 };
      for (let i = 0; i < PAIRS; i++) {
        // Which goes first alternates too: neither always follows the other's garbage.
        const order = i % 2 === 0 ? [false, true] : [true, false];
        for (const keyed of order) {
          const [ms, dbMs] = await create(keyed);
          if (keyed) { sum.keyed += ms; sum.keyedDb += dbMs; } else { sum.plain += ms; sum.plainDb += dbMs; }
        }
      }
      return sum;
    };
    await round(); // warm
    const rounds: Awaited<ReturnType<typeof round>>[] = [];
    for (let r = 0; r < ROUNDS; r++) rounds.push(await round());
    const ratios = rounds.map((s) => s.keyed / s.plain);
    const spread = (xs: number[]) => `${quantile(xs, 0.25).toFixed(2)}–${quantile(xs, 0.75).toFixed(2)}`;
    const p = median(rounds.map((s) => s.plain / PAIRS));
    const k = median(rounds.map((s) => s.keyed / PAIRS));
    let db2 = '— | —';
    if (pids.length) {
      const read = rounds.filter((s) => Number.isFinite(s.plainDb + s.keyedDb));
      const both = read.map((s) => (s.keyed + s.keyedDb) / (s.plain + s.plainDb));
      db2 = `${median(read.map((s) => s.plainDb / PAIRS)).toFixed(3)} / ${median(read.map((s) => s.keyedDb / PAIRS)).toFixed(3)} | **${median(both).toFixed(2)}** (${spread(both)}; ${read.length} rounds)`;
    }
    console.log(`| ${engine} | ${p.toFixed(3)} / ${k.toFixed(3)} | **${median(ratios).toFixed(2)}** (${spread(ratios)}) | ${db2} |`);
    await app.close();
  } finally {
    await close();
  }
}

console.log(`\nbench:keyed-create — ${ROUNDS} rounds of ${PAIRS} unkeyed and ${PAIRS} keyed creates, alternating one by one; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
console.log('| engine | service CPU ms per create, unkeyed / keyed | keyed / unkeyed, service CPU: median of rounds (quartiles); target ≤ 1.3 | PostgreSQL server CPU ms, unkeyed / keyed | keyed / unkeyed, service + database |');
console.log('|---|---:|---:|---:|---:|');
for (const engine of ['pglite', ...(process.env.DATABASE_URL ? ['postgresql'] : [])]) await run(engine);
console.log(`\nload average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
