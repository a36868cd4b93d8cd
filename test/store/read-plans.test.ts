import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db, Queryable } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { getObject, getViews, getWithChildren, listChildren, listObjects } from '../../src/store/objects.js';
import { ENGINES, openTestDb } from '../helpers/service.js';

/**
 * The reads a GET or a list runs, on a table that was never analysed (a fresh database after a
 * bulk load; autovacuum off): each must reach its rows through an index and read no row it does
 * not return. Without statistics the planner knows nothing of how many routes an account holds,
 * so only an index that answers the lookup by itself is a safe choice.
 */

const BIG = 'acct_big';
const SMALL = 'acct_small';
const EDGES = 2000;
const ROUTES_PER_EDGE = 5;
const CAS = 300;
const pad = (n: number) => String(n).padStart(6, '0');
const edgeId = (account: string, n: number) => `edghts_${account.slice(5)}${pad(n)}`;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** `generic`: for a prepared query, the plan PostgreSQL keeps for it once it stops planning per call. */
interface Explained { sql: string; plan: PlanNode; generic?: PlanNode; returned: number }

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

const planOf = (rows: Record<string, unknown>[]): PlanNode => {
  const raw = Object.values(rows[0])[0];
  return (typeof raw === 'string' ? JSON.parse(raw) : raw)[0].Plan as PlanNode;
};

/**
 * Runs each query twice: under EXPLAIN ANALYZE (recorded), then for real (returned to the caller).
 * A prepared query is also explained with the generic plan (the values unknown when planning):
 * after a few calls PostgreSQL may keep that plan for every call.
 */
function explaining(db: Db, log: Explained[]): Queryable {
  return {
    async query(sql: string, params?: unknown[], how?: { prepared?: boolean }) {
      const plan = planOf((await db.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params)).rows);
      const generic = how?.prepared ? await db.tx(async (q) => {
        await q.query('SET LOCAL plan_cache_mode = force_generic_plan');
        await q.query(`PREPARE ep_explained AS ${sql}`);
        const args = (params ?? []).map((v) => `'${String(v).replaceAll("'", "''")}'`).join(', ');
        const out = planOf((await q.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ep_explained(${args})`)).rows);
        await q.query('DEALLOCATE ep_explained');
        return out;
      }) : undefined;
      const result = await db.query(sql, params, how);
      log.push({ sql, plan, generic, returned: result.rows.length });
      return result as never;
    },
  };
}

/** The scans of `objects`: by the indexes named, none filtering or rechecking rows away (in the generic plan too). */
function expectIndexedReads(e: Explained, indexes: string[]): void {
  expectIndexedPlan(e, e.plan, indexes);
  if (e.generic) expectIndexedPlan(e, e.generic, indexes);
}

function expectIndexedPlan(e: Explained, plan: PlanNode, indexes: string[]): void {
  const scans = nodes(plan).filter((n) => n['Relation Name'] === 'objects');
  expect(scans.length, e.sql).toBeGreaterThan(0);
  for (const scan of scans) {
    expect(scan['Node Type'], e.sql).toMatch(/^Index (Only )?Scan$/);
    expect(indexes, e.sql).toContain(scan['Index Name']);
    expect(scan['Rows Removed by Filter'] ?? 0, e.sql).toBe(0);
    expect(scan['Rows Removed by Index Recheck'] ?? 0, e.sql).toBe(0);
  }
  // Every row read from objects is a row returned (a page reads its one extra row, and returns it).
  const read = scans.reduce((sum, n) => sum + n['Actual Rows'] * n['Actual Loops'], 0);
  expect(read, e.sql).toBe(e.returned);
}

describe.each(ENGINES)('reads on a never-analysed table (%s)', (engine) => {
  let db: Db;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    ({ db, drop } = await openTestDb(engine));
    await migrate(db);
    if (engine === 'postgres') await db.query('ALTER TABLE objects SET (autovacuum_enabled = false)');
    await db.query(`INSERT INTO accounts (id, name) VALUES ($1, 'big'), ($2, 'small')`, [BIG, SMALL]);
    // A bulk load: the big account has 2,000 edges of 5 routes and 300 CAs, the small one 10 edges.
    for (const [account, edges] of [[BIG, EDGES], [SMALL, 10]] as const) {
      const prefix = account.slice(5);
      await db.query(
        `INSERT INTO objects (id, account_id, kind, body)
         SELECT 'edghts_' || $2 || lpad(g::text, 6, '0'), $1, 'httpsEdge', '{"description":"e"}' FROM generate_series(1, $3::int) g`,
        [account, prefix, edges]);
      await db.query(
        `INSERT INTO objects (id, account_id, kind, parent_id, body)
         SELECT 'edghtsrt_' || $2 || lpad(g::text, 6, '0') || r, $1, 'httpsEdgeRoute', 'edghts_' || $2 || lpad(g::text, 6, '0'), '{"match":"/"}'
         FROM generate_series(1, $3::int) g, generate_series(1, $4::int) r`,
        [account, prefix, edges, ROUTES_PER_EDGE]);
    }
    await db.query(
      `INSERT INTO objects (id, account_id, kind, body)
       SELECT 'ca_' || lpad(g::text, 6, '0'), $1, 'certificateAuthority', '{"ca_pem":"x"}' FROM generate_series(1, $2::int) g`,
      [BIG, CAS]);
  }, 60_000);

  afterAll(async () => {
    await drop?.();
  });

  it('the table has no statistics', async () => {
    const { rows } = await db.query(`SELECT 1 FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'objects'`);
    expect(rows).toEqual([]);
  });

  it('GET of one object reads that row alone, with or without its parent in the path', async () => {
    const log: Explained[] = [];
    const q = explaining(db, log);
    expect((await getObject(q, BIG, 'httpsEdge', edgeId(BIG, 1234)))?.id).toBe(edgeId(BIG, 1234));
    const routeId = `edghtsrt_big${pad(7)}3`;
    expect((await getObject(q, BIG, 'httpsEdgeRoute', routeId, { parentId: edgeId(BIG, 7) }))?.id).toBe(routeId);
    expect(await getObject(q, SMALL, 'httpsEdge', edgeId(BIG, 1234))).toBeNull();
    expect(log).toHaveLength(3);
    // Prepared: planned once per connection, not on every GET.
    expect(log.every((e) => e.generic)).toBe(true);
    for (const e of log) expectIndexedReads(e, ['objects_pkey', 'objects_account_id_id_key', 'objects_by_kind', 'objects_children', 'objects_by_parent']);
  });

  it('GET of an edge with its routes is one query reading the edge and its 5 routes, whatever the account holds', async () => {
    for (const account of [BIG, SMALL]) {
      const log: Explained[] = [];
      const found = await getWithChildren(explaining(db, log), account, 'httpsEdge', edgeId(account, 3), ['httpsEdgeRoute']);
      expect(found?.row.id).toBe(edgeId(account, 3));
      expect(found?.children.map((c) => c.id)).toEqual([1, 2, 3, 4, 5].map((r) => `edghtsrt_${account.slice(5)}${pad(3)}${r}`));
      expect(log).toHaveLength(1);
      expect(log[0].generic).toBeDefined();
      // The rows come back as one JSON array: every row read is one of the 6 objects in it.
      expect(log[0].returned).toBe(1);
      expectIndexedReads({ ...log[0], returned: 1 + found!.children.length }, ['objects_pkey', 'objects_account_id_id_key', 'objects_children']);
    }
  });

  it('GET of an edge from its stored views is one query reading the edge and its 5 routes, whatever the account holds', async () => {
    for (const account of [BIG, SMALL]) {
      const log: Explained[] = [];
      const found = await getViews(explaining(db, log), account, 'httpsEdge', edgeId(account, 3), 'httpsEdgeRoute', 'rev base');
      // Rows loaded in bulk have no views: the service then shapes the response itself.
      expect(found).toMatchObject({ view: null, children: null });
      expect(log).toHaveLength(1);
      expect(log[0].generic).toBeDefined();
      expectIndexedReads({ ...log[0], returned: 1 + ROUTES_PER_EDGE }, ['objects_pkey', 'objects_account_id_id_key', 'objects_children']);
    }
  });

  it('children of one parent are read through the children index', async () => {
    const log: Explained[] = [];
    const routes = await listChildren(explaining(db, log), BIG, 'httpsEdgeRoute', edgeId(BIG, 1999));
    expect(routes).toHaveLength(ROUTES_PER_EDGE);
    expectIndexedReads(log[0], ['objects_children']);
  });

  it('list pages read their page and nothing more: first, middle and last, with and without children', async () => {
    const log: Explained[] = [];
    const q = explaining(db, log);
    const first = await listObjects(q, BIG, 'certificateAuthority', { limit: 100 });
    expect(first.rows[0].id).toBe(`ca_${pad(CAS)}`);
    expect(first.more).toBe(true);
    const last = await listObjects(q, BIG, 'certificateAuthority', { limit: 100, beforeId: `ca_${pad(51)}` });
    expect(last.rows).toHaveLength(50);
    expect(last.more).toBe(false);
    const edges = await listObjects(q, BIG, 'httpsEdge', { limit: 100, childKinds: ['httpsEdgeRoute'] });
    expect(edges.rows).toHaveLength(100);
    expect(edges.children).toHaveLength(100 * ROUTES_PER_EDGE);
    // The extra row tells that more remain; its routes are not read.
    expect(new Set(edges.children.map((c) => c.parent_id))).toEqual(new Set(edges.rows.map((r) => r.id)));
    const middle = await listObjects(q, BIG, 'httpsEdge', { limit: 100, beforeId: edgeId(BIG, 1000), childKinds: ['httpsEdgeRoute'] });
    expect(middle.rows[0].id).toBe(edgeId(BIG, 999));
    expect(middle.children.filter((c) => c.parent_id === edgeId(BIG, 999)).map((c) => c.id)).toEqual([1, 2, 3, 4, 5].map((r) => `edghtsrt_big${pad(999)}${r}`));
    expect(log).toHaveLength(4);
    for (const e of log) expectIndexedReads(e, ['objects_by_kind', 'objects_children']);
  });
});
