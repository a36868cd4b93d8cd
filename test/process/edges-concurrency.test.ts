import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../helpers/cli.js';
import { hostport } from '../helpers/edges.js';
import { TestClient } from '../helpers/service.js';

/**
 * Uniqueness is the database's job, not a read-then-write: two real `edgeplane serve` processes on
 * one PostgreSQL, 50 concurrent creates of the same hostport (or route match) spread over both.
 */
const DATABASE_URL = process.env.DATABASE_URL;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const N = 50;

function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

/** Starts `edgeplane serve` on a free port and resolves with its URL from the start-up log line. */
function serve(env: NodeJS.ProcessEnv): Promise<{ proc: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...CLI, 'serve', '--port', '0', '--host', '127.0.0.1'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}${err}`)), 30_000);
    proc.stderr!.on('data', (d) => { err += d; });
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /edgeplane listening on (http:\/\/[^\s"]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: m[1] });
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${out}${err}`));
    });
  });
}

describe.skipIf(!DATABASE_URL)('uniqueness across two service processes on one PostgreSQL', () => {
  const schema = 'ep_conc_' + randomBytes(5).toString('hex');
  const procs: ChildProcess[] = [];
  let clients: TestClient[] = [];
  let admin: pg.Client;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const env = { ...process.env, DATABASE_URL: withSearchPath(DATABASE_URL!, schema), EDGEPLANE_LOG_LEVEL: 'info' };
    // Migrates the schema and issues a key; the servers then start against a migrated database.
    const { stdout } = await promisify(execFile)(process.execPath, [...CLI, 'admin', 'accounts', 'create', '--name', 'concurrency', '--json'], { cwd: ROOT, env });
    const { api_key } = JSON.parse(stdout);
    const servers = await Promise.all([serve(env), serve(env)]);
    procs.push(...servers.map((s) => s.proc));
    clients = servers.map((s) => new TestClient(s.url, api_key));
  }, 90_000);

  afterAll(async () => {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))));
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.end();
  }, 30_000);

  function statuses(results: { status: number }[]): Record<number, number> {
    const counts: Record<number, number> = {};
    for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
    return counts;
  }

  it(`${N} concurrent creates of one hostport: one edge, ${N - 1} × 409`, async () => {
    const hp = hostport();
    const results = await Promise.all(Array.from({ length: N }, (_, i) => clients[i % 2].post('/edges/https', { hostports: [hp] })));
    expect(statuses(results)).toEqual({ 201: 1, 409: N - 1 });
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error_code).toBe('ERR_HOSTPORT_IN_USE');
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${schema}.objects WHERE kind = 'httpsEdge' AND body->'hostports' ? $1`, [hp]);
    expect(rows[0].n).toBe(1);
  }, 60_000);

  it(`${N} concurrent creates of one route match on one edge: one route, ${N - 1} × 409`, async () => {
    const edge = await clients[0].post('/edges/https', { hostports: [hostport()] });
    expect(edge.status).toBe(201);
    const url = `/edges/https/${edge.body.id}/routes`;
    const results = await Promise.all(Array.from({ length: N }, (_, i) => clients[i % 2].post(url, { match_type: 'path_prefix', match: '/same' })));
    expect(statuses(results)).toEqual({ 201: 1, 409: N - 1 });
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${schema}.objects WHERE parent_id = $1`, [edge.body.id]);
    expect(rows[0].n).toBe(1);
    expect((await clients[1].get(`/edges/https/${edge.body.id}`)).body.routes).toHaveLength(1);
  }, 60_000);

  it('edges swapping hostports concurrently never fail with a 5xx (deadlocks are retried)', async () => {
    const results: { status: number }[] = [];
    for (let round = 0; round < 5; round++) {
      const [x, y] = [hostport(), hostport()];
      const a = await clients[0].post('/edges/https', { hostports: [x] });
      const b = await clients[1].post('/edges/https', { hostports: [y] });
      results.push(...(await Promise.all([
        clients[0].patch(`/edges/https/${a.body.id}`, { hostports: [y] }),
        clients[1].patch(`/edges/https/${b.body.id}`, { hostports: [x] }),
      ])));
    }
    for (const r of results) expect([200, 409]).toContain(r.status);
  }, 60_000);

  it('concurrent updates moving one hostport onto different edges: exactly one wins', async () => {
    const hp = hostport();
    const edges = await Promise.all(Array.from({ length: 10 }, (_, i) => clients[i % 2].post('/edges/https', { hostports: [hostport()] })));
    const results = await Promise.all(edges.map((e, i) => clients[i % 2].patch(`/edges/https/${e.body.id}`, { hostports: [hp] })));
    expect(statuses(results)).toEqual({ 200: 1, 409: 9 });
  }, 60_000);
});
