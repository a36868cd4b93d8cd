/**
 * PostgreSQL's CPU for one full list fetch (what a reconciler's plan reads: every page of edges
 * with their routes, of CAs and of failover backends) at `scale` × 6,200 objects, on a database
 * that was never analysed (a fresh deployment after a bulk load, or autovacuum off).
 *
 * One edge with 5 routes (modules and a backend), one CA and one failover backend are created
 * through the API; the rest are copies of their stored rows inserted in bulk, with ids made as the
 * service makes them (creation-ordered). The service runs in this process; the CPU counted is that
 * of the PostgreSQL backends serving its pool (`/proc/<pid>/stat`, found by application name).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { kindByName } from '../src/kinds/registry.js';
import { buildApp } from '../src/service/app.js';
import { createAccount } from '../src/service/auth.js';
import { migrate } from '../src/store/migrate.js';
import { openPostgres } from '../src/store/postgres.js';
import { newId } from '../src/util/ids.js';
import { urlOf } from './baselines.js';
import { processesCpuMs } from './cpu-share.js';
import { newEdgeWithRoutes, type SeedClient } from './scenarios.js';

export interface ListFetchResult {
  objects: number;
  /** List requests of one full fetch. */
  pages: number;
  rounds: number;
  /** PostgreSQL backends' user + system CPU per full fetch, ms (the mean over the rounds). */
  pgCpuMs: number;
  /** Wall time of one full fetch through the service, ms (the mean over the rounds). */
  wallMs: number;
  /** Whether the objects table had statistics at the end (it must not: the row is about their absence). */
  analysed: boolean;
}

const LISTS = ['/edges/https', '/certificate_authorities', '/backends/failover'];

export async function measureListFetch(databaseUrl: string, scale: number, rounds: number): Promise<ListFetchResult> {
  const schema = 'ep_bench_list_' + randomBytes(6).toString('hex');
  const url = new URL(databaseUrl);
  url.searchParams.set('application_name', schema);
  const db = await openPostgres(url.toString(), { schema, max: 2 });
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    await migrate(db);
    // Never analysed for the whole run: autovacuum would analyse the table a minute after the load.
    await db.query('ALTER TABLE objects SET (autovacuum_enabled = false)');
    const app = await buildApp({ db, logLevel: 'silent' });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { api_key, account_id } = await createAccount(db, { name: 'bench list' });
      const headers = { authorization: `Bearer ${api_key}`, 'service-version': '2' };
      const base = urlOf(app);
      const call = async (method: string, path: string, body?: unknown, status = 200) => {
        const res = await fetch(path.startsWith('http') ? path : base + path, {
          method, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        if (res.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${res.status}: ${text.slice(0, 300)}`);
        return text ? JSON.parse(text) : undefined;
      };
      const api: SeedClient = {
        post: (path, body, status = 201) => call('POST', path, body, status),
        put: (path, body, status = 200) => call('PUT', path, body, status),
        get: (path, status = 200) => call('GET', path, undefined, status),
      };
      await newEdgeWithRoutes(api); // with a CA and a failover backend of its own
      await bulkCopies(db, account_id, scale);

      const fetchAll = async () => {
        let pages = 0;
        let objects = 0;
        for (const list of LISTS) {
          for (let next: string | null = `${list}?limit=100`; next;) {
            const page = await call('GET', next);
            pages++;
            for (const value of Object.values(page)) {
              if (!Array.isArray(value)) continue;
              for (const item of value as { routes?: unknown[] }[]) objects += 1 + (item.routes?.length ?? 0);
            }
            next = page.next_page_uri;
          }
        }
        return { pages, objects };
      };
      const backends = async () =>
        (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [schema])).rows.map((r) => r.pid);
      const cpuOf = (pids: number[]) => new Map(pids.map((pid) => [pid, processesCpuMs([pid]) ?? NaN]));

      const warm = await fetchAll();
      const before = cpuOf(await backends());
      const t0 = performance.now();
      for (let r = 0; r < rounds; r++) await fetchAll();
      const wallMs = (performance.now() - t0) / rounds;
      const after = cpuOf(await backends());
      let cpu = 0;
      for (const [pid, ms] of after) cpu += ms - (before.get(pid) ?? 0);
      for (const pid of before.keys()) {
        if (!after.has(pid)) throw new Error(`PostgreSQL backend ${pid} of the bench's pool went away during the fetches: its CPU is lost`);
      }
      if (Number.isNaN(cpu)) throw new Error('cannot read PostgreSQL backends\' CPU from /proc (PostgreSQL on another host?)');
      const { rows } = await admin.query<{ n: string }>(
        `SELECT (analyze_count + autoanalyze_count)::text AS n FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'objects'`, [schema]);
      const stats = await admin.query(`SELECT 1 FROM pg_stats WHERE schemaname = $1 AND tablename = 'objects' LIMIT 1`, [schema]);
      return {
        objects: warm.objects, pages: warm.pages, rounds,
        pgCpuMs: Math.round(cpu / rounds), wallMs: Math.round(wallMs),
        analysed: Number(rows[0]?.n ?? 0) > 0 || stats.rows.length > 0,
      };
    } finally {
      await app.close();
    }
  } finally {
    try {
      await db.query(`DROP SCHEMA ${schema} CASCADE`);
    } finally {
      await db.close();
      await admin.end();
    }
  }
}

/**
 * Copies of the account's CA, failover backend and edge (with its routes) up to `scale` × (1,000
 * edges × 5 routes, 100 CAs, 100 failover backends), as rows: what a bulk load leaves behind.
 */
async function bulkCopies(db: Awaited<ReturnType<typeof openPostgres>>, accountId: string, scale: number): Promise<void> {
  const { rows } = await db.query<{ kind: string; body: unknown }>('SELECT kind, body FROM objects WHERE account_id = $1 ORDER BY id', [accountId]);
  const bodyOf = (kind: string) => JSON.stringify(rows.find((r) => r.kind === kind)!.body);
  const ca = bodyOf('certificateAuthority');
  const failover = bodyOf('failoverBackend');
  const edgeBody = bodyOf('httpsEdge');
  const prefix = (kind: string) => kindByName(kind).idPrefix;
  const routeBodies = rows.filter((r) => r.kind === 'httpsEdgeRoute').map((r) => JSON.stringify(r.body));
  const batch = { id: [] as string[], kind: [] as string[], parent: [] as (string | null)[], body: [] as string[] };
  const flush = async () => {
    if (batch.id.length === 0) return;
    await db.query(
      `INSERT INTO objects (id, account_id, kind, parent_id, body)
       SELECT r.id, $1, r.kind, r.parent, r.body::jsonb FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS r(id, kind, parent, body)`,
      [accountId, batch.id, batch.kind, batch.parent, batch.body],
    );
    for (const list of Object.values(batch)) list.length = 0;
  };
  const add = async (id: string, kind: string, parent: string | null, body: string) => {
    batch.id.push(id); batch.kind.push(kind); batch.parent.push(parent); batch.body.push(body);
    if (batch.id.length >= 5000) await flush();
  };
  for (let i = 1; i < 100 * scale; i++) await add(newId(prefix('certificateAuthority')), 'certificateAuthority', null, ca);
  for (let i = 1; i < 100 * scale; i++) await add(newId(prefix('failoverBackend')), 'failoverBackend', null, failover);
  for (let i = 1; i < 1000 * scale; i++) {
    const edge = newId(prefix('httpsEdge'));
    await add(edge, 'httpsEdge', null, edgeBody);
    for (const body of routeBodies) await add(newId(prefix('httpsEdgeRoute')), 'httpsEdgeRoute', edge, body);
  }
  await flush();
}
