/**
 * `npm run bench:keyed-create`: what an Idempotency-Key costs a create on the service (issue #35:
 * a keyed create ≤ 1.3× an unkeyed one). The service runs in this process on each engine (PGlite in
 * memory; PostgreSQL too when DATABASE_URL is set), requests go through `inject` (no socket), and
 * the process's CPU time is read around each batch. Keyed and unkeyed batches alternate, so both
 * see the same machine; the ratio of the medians is the figure. Failover backends with no
 * references: the write path itself (version, marker, idempotency record), not the checks of a kind.
 * On PostgreSQL the database's own CPU is also shown when its server runs on this machine (the
 * bench's connections, by application name, read in /proc): what the keyed statements cost there.
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

const BATCH = 200;
const ROUNDS = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 5;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

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
    // The CPU time of the bench's PostgreSQL server processes, in ms (undefined: not on this machine).
    const serverCpu = async (): Promise<number | undefined> => {
      if (engine === 'pglite') return undefined;
      const { rows } = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [process.env.PGAPPNAME]);
      try {
        return rows.reduce((sum, r) => sum + Number(readFileSync(`/proc/${r.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6, 0);
      } catch {
        return undefined;
      }
    };
    const dbMs: { plain: number[]; keyed: number[] } = { plain: [], keyed: [] };
    const batch = async (keyed: boolean): Promise<number> => {
      const s0 = await serverCpu();
      const c0 = process.cpuUsage();
      for (let i = 0; i < BATCH; i++, n++) {
        const res = await app.inject({
          method: 'POST', url: '/backends/failover',
          headers: keyed ? { ...headers, 'idempotency-key': `bench-${n}` } : headers,
          payload: JSON.stringify({ description: `pool ${n}`, backends: ['bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs'] }),
        });
        if (res.statusCode !== 201) throw new Error(`${res.statusCode} ${res.body}`);
      }
      const c = process.cpuUsage(c0);
      const s1 = await serverCpu();
      if (s0 !== undefined && s1 !== undefined) dbMs[keyed ? 'keyed' : 'plain'].push((s1 - s0) / BATCH);
      return (c.user + c.system) / 1000 / BATCH;
    };
    await batch(false); await batch(true); // warm
    const plain: number[] = [];
    const keyed: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      plain.push(await batch(false));
      keyed.push(await batch(true));
    }
    const p = median(plain);
    const k = median(keyed);
    // The server processes' CPU: from the warm batches' counts, of the measured rounds only.
    const dp = dbMs.plain.length > ROUNDS ? median(dbMs.plain.slice(-ROUNDS)) : undefined;
    const dk = dbMs.keyed.length > ROUNDS ? median(dbMs.keyed.slice(-ROUNDS)) : undefined;
    const db2 = dp !== undefined && dk !== undefined ? `${dp.toFixed(3)} / ${dk.toFixed(3)} | ${((k + dk) / (p + dp)).toFixed(2)}` : '— | —';
    console.log(`| ${engine} | ${p.toFixed(3)} | ${k.toFixed(3)} | **${(k / p).toFixed(2)}** | ${db2} |`);
    await app.close();
  } finally {
    await close();
  }
}

console.log(`\nbench:keyed-create — ${ROUNDS} rounds of ${BATCH} creates each way, median CPU ms per create of this process; load average ${loadavg()[0].toFixed(2)}\n`);
console.log('| engine | unkeyed create, CPU ms | keyed create, CPU ms | keyed / unkeyed (target ≤ 1.3) | PostgreSQL server CPU ms, unkeyed / keyed | keyed / unkeyed, service + database |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const engine of ['pglite', ...(process.env.DATABASE_URL ? ['postgresql'] : [])]) await run(engine);
