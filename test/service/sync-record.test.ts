import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

const counts = (n = 0) => ({ create: n, update: 0, replace: 0, delete: 0 });
const run = (over: Record<string, unknown> = {}) => ({
  stack: 'web', commit: { sha: 'a'.repeat(40), subject: 'first', author: 'Ann <ann@example.com>' }, trigger: 'commit', holder: 'agent-1',
  duration_ms: 1500, outcome: 'applied', counts: counts(3), ...over,
});

/** The record of syncs (docs/api.md, "Sync record"): runs and stack summaries, over HTTP on both engines. */
describe.each(ENGINES)('sync record (%s)', (engine) => {
  let svc: TestService;
  let c: TestClient;
  beforeAll(async () => {
    svc = await startTestService(engine, { syncRecord: { runsPerStack: 5 } });
    c = await svc.account();
  });
  afterAll(() => svc?.close());

  it('a run is recorded, read with its plan, listed without it; the stack is synced at its commit', async () => {
    const a = await svc.account();
    const objects = [{ identity: 'HTTPSEdge/web', action: 'update', fields: ['description', 'hostports'] }, { identity: 'CertificateAuthority/root', action: 'create', fields: [] }];
    const posted = await a.post('/sync_runs', run({ plan_markdown: '### Plan\n\n3 to create', drift_count: 0, objects }));
    expect(posted.status, posted.text).toBe(201);
    expect(posted.body.objects).toEqual(objects);
    expect(posted.body).toMatchObject({
      id: expect.stringMatching(/^syncrun_/), stack: 'web', trigger: 'commit', holder: 'agent-1', outcome: 'applied', counts: counts(3),
      commit: { sha: 'a'.repeat(40), subject: 'first', author: 'Ann <ann@example.com>' }, error: null, plan_markdown: '### Plan\n\n3 to create',
    });
    expect(posted.headers.get('location')).toBe(posted.body.uri);
    expect(Date.parse(posted.body.finished_at) - Date.parse(posted.body.started_at)).toBeGreaterThanOrEqual(1000);
    const got = await a.get(`/sync_runs/${posted.body.id}`);
    expect(got.body).toEqual(posted.body);
    const list = await a.get('/sync_runs?stack=web');
    expect(list.body.sync_runs).toHaveLength(1);
    expect(list.body.sync_runs[0]).not.toHaveProperty('plan_markdown');
    expect(list.body.sync_runs[0]).not.toHaveProperty('objects');
    // Bounded: more objects than a run lists is refused, nothing written.
    const tooMany = await a.post('/sync_runs', run({ objects: Array.from({ length: 501 }, (_, i) => ({ identity: `FailoverBackend/p${i}`, action: 'update', fields: [] })) }));
    expect(tooMany.status).toBe(400);
    expect((await a.get('/sync_runs?stack=web')).body.sync_runs).toHaveLength(1);
    expect(list.body.next_page_uri).toBeNull();
    const stack = await a.get('/stacks/web');
    expect(stack.status, stack.text).toBe(200);
    expect(stack.body).toMatchObject({
      stack: 'web', status: 'synced', drift_count: 0, live_commit: { sha: 'a'.repeat(40), subject: 'first' }, lock: null,
      last_run: { id: posted.body.id, outcome: 'applied', trigger: 'commit', commit_sha: 'a'.repeat(40) }, runs_uri: `${svc.url}/sync_runs?stack=web`,
    });
    // Another account sees none of it.
    const other = await svc.account();
    expect((await other.get(`/sync_runs/${posted.body.id}`)).status).toBe(404);
    expect((await other.get('/stacks/web')).status).toBe(404);
    expect((await other.get('/sync_runs')).body.sync_runs).toEqual([]);
    expect((await other.get('/stacks')).body.stacks).toEqual([]);
  });

  it('a run keeps what the policies found and its overrides with their reasons; null without policies; bounded', async () => {
    const a = await svc.account();
    const policy = { denied: 2, warned: 1, overrides: [{ policy: 'cap-edge-deletes', reason: 'INC-4711: retiring eu-west' }] };
    const posted = await a.post('/sync_runs', run({ stack: 'pol', policy }));
    expect(posted.status, posted.text).toBe(201);
    expect(posted.body.policy).toEqual(policy);
    expect((await a.get(`/sync_runs/${posted.body.id}`)).body.policy).toEqual(policy);
    expect((await a.get('/sync_runs?stack=pol')).body.sync_runs[0].policy).toEqual(policy);
    const none = await a.post('/sync_runs', run({ stack: 'pol' }));
    expect(none.body.policy).toBeNull();
    for (const bad of [{ denied: -1, warned: 0, overrides: [] }, { denied: 0, warned: 0, overrides: [{ policy: 'x', reason: '' }] }, { denied: 0, warned: 0, overrides: [{ policy: 'x', reason: 'r'.repeat(501) }] }, { denied: 0, warned: 0 }]) {
      const r = await a.post('/sync_runs', run({ stack: 'pol', policy: bad }));
      expect(r.status, JSON.stringify(bad)).toBe(400);
    }
    expect((await a.get('/sync_runs?stack=pol')).body.sync_runs).toHaveLength(2);
  });

  it('the status follows the last run; a failure keeps the live commit; drift counts', async () => {
    const a = await svc.account();
    await a.post('/sync_runs', run());
    const drifted = await a.post('/sync_runs', run({ trigger: 'interval', outcome: 'drifted', drift_count: 2, counts: { create: 0, update: 2, replace: 0, delete: 0 } }));
    expect(drifted.status, drifted.text).toBe(201);
    expect((await a.get('/stacks/web')).body).toMatchObject({ status: 'out_of_sync', drift_count: 2, live_commit: { sha: 'a'.repeat(40) } });
    const failed = await a.post('/sync_runs', run({ commit: { sha: 'b'.repeat(40) }, outcome: 'failed', error: 'manifests do not validate', counts: counts() }));
    expect(failed.body.commit).toEqual({ sha: 'b'.repeat(40), subject: null, author: null });
    expect((await a.get('/stacks/web')).body).toMatchObject({ status: 'failed', live_commit: { sha: 'a'.repeat(40) }, last_run: { outcome: 'failed' } });
    await a.post('/sync_runs', run({ commit: { sha: 'c'.repeat(40) }, outcome: 'blocked', error: 'safety threshold' }));
    expect((await a.get('/stacks/web')).body).toMatchObject({ status: 'failed', live_commit: { sha: 'a'.repeat(40) } });
    await a.post('/sync_runs', run({ commit: { sha: 'd'.repeat(40) }, outcome: 'no_changes', counts: counts() }));
    expect((await a.get('/stacks/web')).body).toMatchObject({ status: 'synced', drift_count: 0, live_commit: { sha: 'd'.repeat(40) } });
    // A CLI run with no commit: applied makes the live commit unknown; no changes keeps it.
    await a.post('/sync_runs', run({ stack: 'cli', commit: null, trigger: 'cli', outcome: 'no_changes', counts: counts() }));
    expect((await a.get('/stacks/cli')).body).toMatchObject({ status: 'synced', live_commit: null });
    await a.post('/sync_runs', run({ stack: 'cli', commit: { sha: 'e'.repeat(40) }, trigger: 'cli' }));
    await a.post('/sync_runs', run({ stack: 'cli', commit: null, trigger: 'cli', outcome: 'no_changes', counts: counts() }));
    expect((await a.get('/stacks/cli')).body.live_commit).toMatchObject({ sha: 'e'.repeat(40) });
    await a.post('/sync_runs', run({ stack: 'cli', commit: null, trigger: 'cli' }));
    expect((await a.get('/stacks/cli')).body.live_commit).toBeNull();
  });

  it('lists page newest first; the retention cap keeps the newest runs of each stack', async () => {
    const a = await svc.account();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await a.post('/sync_runs', run({ outcome: 'no_changes', counts: counts() }))).body.id);
    await a.post('/sync_runs', run({ stack: 'api' }));
    const all = await a.get('/sync_runs?stack=web&limit=2');
    expect(all.body.sync_runs.map((r: any) => r.id)).toEqual([ids[6], ids[5]]);
    expect(all.body.next_page_uri).toBe(`${svc.url}/sync_runs?stack=web&before_id=${ids[5]}&limit=2`);
    const seen: string[] = [];
    let next: string | null = '/sync_runs?stack=web&limit=2';
    while (next) {
      const page = await a.get(next.replace(svc.url, ''));
      seen.push(...page.body.sync_runs.map((r: any) => r.id));
      next = page.body.next_page_uri;
    }
    expect(seen).toEqual(ids.slice(2).reverse()); // 5 kept
    expect((await a.get(`/sync_runs/${ids[0]}`)).status).toBe(404);
    expect((await a.get('/sync_runs')).body.sync_runs).toHaveLength(6);
  });

  it('stacks are listed by name with their locks, and page with after', async () => {
    const a = await svc.account();
    for (const s of ['b-stack', 'a-stack', 'c-stack']) await a.post('/sync_runs', run({ stack: s }));
    const lock = await a.post('/stack_locks', { stack: 'locked-only', holder: 'bob@ci' });
    expect(lock.status).toBe(201);
    await a.post('/stack_locks', { stack: 'a-stack', holder: 'agent-2' });
    const first = await a.get('/stacks?limit=2');
    expect(first.body.stacks.map((s: any) => s.stack)).toEqual(['a-stack', 'b-stack']);
    expect(first.body.stacks[0].lock).toMatchObject({ holder: 'agent-2' });
    expect(first.body.next_page_uri).toBe(`${svc.url}/stacks?after=b-stack&limit=2`);
    const second = await a.get(first.body.next_page_uri.replace(svc.url, ''));
    expect(second.body.stacks.map((s: any) => s.stack)).toEqual(['c-stack', 'locked-only']);
    expect(second.body.stacks[1]).toMatchObject({ status: 'unknown', last_run: null, live_commit: null, lock: { holder: 'bob@ci' } });
    expect(second.body.next_page_uri).toBeNull();
  });

  it('a sync asked for is shown until a run that started after it answers it', async () => {
    const a = await svc.account();
    const asked = await a.post('/stacks/web/sync', { requested_by: 'ann@laptop' });
    expect(asked.status, asked.text).toBe(202);
    expect(asked.body).toMatchObject({ stack: 'web', status: 'unknown', sync_requested_at: expect.stringMatching(/Z$/), sync_requested_by: 'ann@laptop' });
    // A run that started before the request (it took an hour) does not answer it.
    await a.post('/sync_runs', run({ duration_ms: 3_600_000 }));
    expect((await a.get('/stacks/web')).body.sync_requested_at).not.toBeNull();
    // Nor does a drift check that started after it: it only reports.
    await a.post('/sync_runs', run({ trigger: 'interval', outcome: 'drifted', drift_count: 1, duration_ms: 0 }));
    expect((await a.get('/stacks/web')).body.sync_requested_at).not.toBeNull();
    await a.post('/sync_runs', run({ trigger: 'manual', duration_ms: 0 }));
    expect((await a.get('/stacks/web')).body).toMatchObject({ sync_requested_at: null, sync_requested_by: null });
    // No body at all is a request too.
    expect((await a.request('POST', '/stacks/web/sync')).status).toBe(202);
  });

  it('bad input is a clear 4xx, never a 500', async () => {
    const bad = async (body: unknown, code = 'ERR_VALIDATION') => {
      const res = await c.post('/sync_runs', body);
      expect(res.status, res.text).toBe(400);
      expect(res.body.error_code).toBe(code);
    };
    await bad(run({ stack: 'Web!' }));
    await bad(run({ outcome: 'fine' }));
    await bad(run({ trigger: 'cron' }));
    await bad(run({ commit: { sha: 'xyz' } }));
    await bad(run({ counts: { create: -1, update: 0, replace: 0, delete: 0 } }));
    await bad(run({ holder: 'a\u0000b' }));
    await bad(run({ plan_markdown: 'x'.repeat(70_000) }));
    await bad(run({ extra: 1 }), 'ERR_UNKNOWN_FIELD');
    expect((await c.get('/sync_runs?limit=0')).body.error_code).toBe('ERR_INVALID_QUERY');
    expect((await c.get('/sync_runs?stack=A')).body.error_code).toBe('ERR_INVALID_QUERY');
    expect((await c.get('/sync_runs?before_id=x')).body.error_code).toBe('ERR_INVALID_QUERY');
    expect((await c.get('/stacks?after=%00')).body.error_code).toBe('ERR_INVALID_QUERY');
    expect((await c.get('/stacks?x=1')).body.error_code).toBe('ERR_INVALID_QUERY');
    expect((await c.get('/sync_runs/syncrun_nope')).status).toBe(404);
    expect((await c.get('/stacks/NOPE')).status).toBe(404);
    expect((await c.post('/stacks/NOPE/sync', {})).status).toBe(400);
    expect((await c.post('/stacks/web/sync', { who: 1 })).status).toBe(400);
    expect((await c.request('DELETE', '/sync_runs')).status).toBe(405);
    expect((await c.request('PUT', '/stacks/web')).status).toBe(405);
  });

  it('a run posted twice with one Idempotency-Key is recorded once', async () => {
    const a = await svc.account();
    const h = { 'idempotency-key': 'run-key-1' };
    const one = await a.request('POST', '/sync_runs', run(), h);
    const two = await a.request('POST', '/sync_runs', run(), h);
    expect(two.body.id).toBe(one.body.id);
    expect((await a.get('/sync_runs')).body.sync_runs).toHaveLength(1);
  });

  it('a run with a large plan is kept for its key by reference, and its replay is the run as first answered', async () => {
    const a = await svc.account();
    const h = { 'idempotency-key': 'run-key-big' };
    const body = run({ plan_markdown: 'p'.repeat(60_000) });
    const one = await a.request('POST', '/sync_runs', body, h);
    expect(one.status, one.text).toBe(201);
    const two = await a.request('POST', '/sync_runs', body, h);
    expect(two.status).toBe(201);
    expect(two.headers.get('idempotent-replayed')).toBe('true');
    expect(two.headers.get('location')).toBe(one.headers.get('location'));
    expect(two.body).toEqual(one.body);
    const kept = await svc.db.query<{ object_id: string | null }>('SELECT object_id FROM idempotency_keys WHERE account_id = $1', [a.accountId]);
    expect(kept.rows).toEqual([{ object_id: one.body.id }]);
  });
});
