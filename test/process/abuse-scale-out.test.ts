import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/service/auth.js';
import type { Db } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { openPostgres } from '../../src/store/postgres.js';
import { startServe, type Served } from '../helpers/cli.js';
import { TestClient } from '../helpers/service.js';

const BASE = process.env.DATABASE_URL;

/**
 * Several `serve` processes on one PostgreSQL share the abuse-report queue: every job runs once,
 * and a worker killed mid-run leaves its jobs to the others once their lease runs out.
 */
describe.skipIf(!BASE)('abuse report processing scales out over serve processes (PostgreSQL)', () => {
  let schema: string;
  let db: Db;
  let url: string;
  const servers: Served[] = [];

  beforeAll(async () => {
    schema = 'ep_scale_' + randomBytes(5).toString('hex');
    db = await openPostgres(BASE!, { schema, max: 4 });
    await migrate(db);
    // Each child process reaches the same schema through the connection string.
    url = `${BASE}${BASE!.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop('SIGKILL').catch(() => {})));
    await db?.query(`DROP SCHEMA ${schema} CASCADE`);
    await db?.close();
  });

  const serve = async (env: Record<string, string> = {}) => {
    const s = await startServe([], { env: { DATABASE_URL: url, EDGEPLANE_JOB_POLL_MS: '50', ...env } });
    servers.push(s);
    const worker = /"worker":"([^"]+)"/.exec(s.logs())![1];
    return { ...s, worker };
  };

  /** 200 reports through the given servers in turn, 20 requests in flight, hostnames no edge serves. */
  const submit = async (apiKey: string, urls: string[], n: number, tag: string) => {
    const ids: string[] = [];
    for (let start = 0; start < n; start += 20) {
      const batch = await Promise.all(Array.from({ length: Math.min(20, n - start) }, async (_, j) => {
        const i = start + j;
        const c = new TestClient(urls[i % urls.length], apiKey);
        const res = await c.post('/abuse_reports', { urls: [`https://r${i}.${tag}.example/a`, `https://r${i}-b.${tag}.example/`] });
        expect(res.status, res.text).toBe(201);
        return res.body.id as string;
      }));
      ids.push(...batch);
    }
    return ids;
  };

  const jobs = async (ids: string[]) => (await db.query<{ object_id: string; state: string; attempts: number; completions: number; finished_by: string; claimed_by: string }>(
    'SELECT object_id, state, attempts, completions, finished_by, claimed_by FROM jobs WHERE object_id = ANY($1)', [ids])).rows;

  const allDone = async (ids: string[], ms = 90_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const rows = await jobs(ids);
      if (rows.length === ids.length && rows.every((r) => r.state === 'done')) return rows;
      if (Date.now() > deadline) throw new Error(`jobs not done: ${rows.filter((r) => r.state !== 'done').length} left`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const statuses = async (ids: string[]) => (await db.query<{ status: string; n: string }>(
    `SELECT body ->> 'status' AS status, count(*) AS n FROM objects WHERE id = ANY($1) GROUP BY 1`, [ids])).rows;

  it('two serve processes: 200 reports, every one PROCESSED, every job run exactly once, by both workers', { timeout: 240_000 }, async () => {
    const account = await createAccount(db, { name: 'scale', abuseReports: true });
    const [a, b] = await Promise.all([serve(), serve()]);
    const ids = await submit(account.api_key, [a.url, b.url], 200, 'one');
    const rows = await allDone(ids);
    expect(rows).toHaveLength(200);
    for (const r of rows) expect({ attempts: r.attempts, completions: r.completions }).toEqual({ attempts: 1, completions: 1 });
    expect(new Set(rows.map((r) => r.finished_by))).toEqual(new Set([a.worker, b.worker]));
    expect(await statuses(ids)).toEqual([{ status: 'PROCESSED', n: '200' }]);
    const got = await new TestClient(b.url, account.api_key).get(`/abuse_reports/${ids[0]}`);
    expect(got.body.hostnames).toEqual([{ hostname: 'r0.one.example', status: 'IGNORE' }, { hostname: 'r0-b.one.example', status: 'IGNORE' }]);
    await Promise.all([a.stop('SIGTERM'), b.stop('SIGTERM')]);
    servers.length = 0;
  });

  it('a worker killed mid-run: the other takes over its leased jobs; none is lost or done twice', { timeout: 240_000 }, async () => {
    const account = await createAccount(db, { name: 'crash', abuseReports: true });
    // The victim is slow (each job waits 400 ms), so it is killed holding claimed, unfinished jobs.
    // The survivor starts once the victim has been killed holding jobs: on a loaded machine a
    // survivor running from the start can drain the queue before the victim claims anything.
    const victim = await serve({ EDGEPLANE_JOB_LEASE_MS: '1500', EDGEPLANE_JOB_DELAY_MS: '400' });
    const ids = await submit(account.api_key, [victim.url], 200, 'two');
    const deadline = Date.now() + 60_000;
    let held: string[] = [];
    while (!held.length) {
      held = (await jobs(ids)).filter((r) => r.state === 'running' && r.claimed_by === victim.worker).map((r) => r.object_id);
      if (!held.length && Date.now() > deadline) throw new Error('the victim never held a job');
      if (!held.length) await new Promise((r) => setTimeout(r, 20));
    }
    await victim.stop('SIGKILL');
    // What it held when it died: a job it was seen running may have finished before the kill
    // landed (on a loaded machine the kill can take longer than a job), and is not among them.
    const running = (await jobs(ids)).filter((r) => r.state === 'running' && r.claimed_by === victim.worker).map((r) => r.object_id);
    if (running.length) held = running;
    const survivor = await serve({ EDGEPLANE_JOB_LEASE_MS: '1500' });

    const rows = await allDone(ids);
    expect(rows.every((r) => r.completions === 1)).toBe(true);
    const byId = new Map(rows.map((r) => [r.object_id, r]));
    // Jobs the victim held when it died were claimed again and finished by the survivor.
    const taken = held.filter((id) => byId.get(id)!.finished_by === survivor.worker);
    expect(taken.length).toBeGreaterThan(0);
    expect(taken).toEqual(held.filter((id) => byId.get(id)!.finished_by !== victim.worker));
    for (const id of taken) expect(byId.get(id)!.attempts).toBeGreaterThanOrEqual(2);
    expect(await statuses(ids)).toEqual([{ status: 'PROCESSED', n: '200' }]);
    expect((await db.query(`SELECT count(*) AS n FROM jobs WHERE state <> 'done'`)).rows[0].n).toBe('0');
  });
});
