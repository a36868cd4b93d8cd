/**
 * `npm run bench:keyed-create`: what an Idempotency-Key costs a create on the service (issue #35:
 * a keyed create ≤ 1.3× an unkeyed one). The service runs in this process on each engine (PGlite in
 * memory; PostgreSQL too when DATABASE_URL is set), requests go through `inject` (no socket), and
 * the process's CPU time is read around each batch. Keyed and unkeyed batches alternate, so both
 * see the same machine; the ratio of the medians is the figure. Failover backends with no
 * references: the write path itself (version, marker, idempotency record), not the checks of a kind.
 */
import { randomBytes } from 'node:crypto';
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
    const batch = async (keyed: boolean): Promise<number> => {
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
    console.log(`| ${engine} | ${p.toFixed(3)} | ${k.toFixed(3)} | **${(k / p).toFixed(2)}** |`);
    await app.close();
  } finally {
    await close();
  }
}

console.log(`\nbench:keyed-create — ${ROUNDS} rounds of ${BATCH} creates each way, median CPU ms per create of this process; load average ${loadavg()[0].toFixed(2)}\n`);
console.log('| engine | unkeyed create, CPU ms | keyed create, CPU ms | keyed / unkeyed (target ≤ 1.3) |');
console.log('|---|---:|---:|---:|');
for (const engine of ['pglite', ...(process.env.DATABASE_URL ? ['postgresql'] : [])]) await run(engine);
