import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideAbuseHostname, listAbuseReports, processAbuseReport } from '../../src/service/routes/abuse-reports.js';
import { drainJobs, startJobWorker } from '../../src/service/job-worker.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

describe.each(ENGINES)('abuse reports on %s', (engine) => {
  let svc: TestService;
  beforeAll(async () => { svc = await startTestService(engine); });
  afterAll(async () => { await svc?.close(); });

  const report = async (c: TestClient, urls: string[], extra: Record<string, unknown> = {}) => {
    const res = await c.post('/abuse_reports', { urls, ...extra });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const edge = async (c: TestClient, hostports: string[]) => {
    const res = await c.post('/edges/https', { hostports });
    expect(res.status, res.text).toBe(201);
    return res.body.id as string;
  };
  const jobsOf = async (id: string) =>
    (await svc.db.query<{ state: string; attempts: number; completions: number }>('SELECT state, attempts, completions FROM jobs WHERE object_id = $1', [id])).rows;

  it('creates a report: hostnames parsed out, lower case, deduplicated, PENDING until processed', async () => {
    const c = await svc.account({ abuseReports: true });
    const urls = ['https://Phish.Example.com/login?x=1', 'http://phish.example.com.:8080/other', 'https://xn--mnchen-3ya.de/', 'https://münchen.de/a', 'http://10.1.2.3/'];
    const created = await report(c, urls, { metadata: '{"ticket":42}' });
    expect(created).toEqual({
      id: expect.stringMatching(/^abrp_[0-9A-Za-z]{27}$/),
      uri: `${svc.url}/abuse_reports/${created.id}`,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      urls,
      metadata: '{"ticket":42}',
      status: 'PENDING',
      hostnames: [
        { hostname: 'phish.example.com', status: 'PENDING' },
        { hostname: 'xn--mnchen-3ya.de', status: 'PENDING' },
        { hostname: '10.1.2.3', status: 'PENDING' },
      ],
    });
    const got = await c.get(`/abuse_reports/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created);
    expect(await jobsOf(created.id)).toEqual([{ state: 'queued', attempts: 0, completions: 0 }]);
    const without = await report(c, ['https://a.example/']);
    expect(without).not.toHaveProperty('metadata');
  });

  it('answers 403 to an account without the abuse-report flag, before looking at the body', async () => {
    const flagged = await svc.account({ abuseReports: true });
    const created = await report(flagged, ['https://x.example/']);
    const plain = await svc.account();
    for (const res of [
      await plain.post('/abuse_reports', { urls: ['https://x.example/'] }),
      await plain.post('/abuse_reports', { nonsense: true }),
      await plain.get(`/abuse_reports/${created.id}`),
      await plain.get('/abuse_reports/abrp_000000000000000000000000000'),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error_code: 'ERR_FORBIDDEN', status_code: 403, msg: expect.stringContaining('abuse reports') });
      expect(res.body.details.operation_id).toMatch(/^op_/);
    }
  });

  it('offers create and get only', async () => {
    const c = await svc.account({ abuseReports: true });
    const created = await report(c, ['https://x.example/']);
    for (const [method, path] of [['GET', '/abuse_reports'], ['DELETE', `/abuse_reports/${created.id}`], ['PATCH', `/abuse_reports/${created.id}`], ['PUT', `/abuse_reports/${created.id}`]]) {
      const res = await c.request(method, path, method === 'PATCH' || method === 'PUT' ? { metadata: 'x' } : undefined);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.body.error_code).toBe('ERR_METHOD_NOT_ALLOWED');
    }
    expect((await c.request('DELETE', `/abuse_reports/${created.id}`)).headers.get('allow')).toBe('GET, HEAD');
  });

  it("answers 404 for another account's report and for unknown ids", async () => {
    const a = await svc.account({ abuseReports: true });
    const b = await svc.account({ abuseReports: true });
    const created = await report(a, ['https://x.example/']);
    const other = await b.get(`/abuse_reports/${created.id}`);
    expect(other.status).toBe(404);
    expect(other.body.error_code).toBe('ERR_NOT_FOUND');
    expect((await a.get('/abuse_reports/abrp_000000000000000000000000000')).status).toBe(404);
  });

  it('validates urls, naming the bad one, and metadata in bytes', async () => {
    const c = await svc.account({ abuseReports: true });
    const cases: [unknown, string][] = [
      [{ urls: ['https://ok.example/', 'https://ok2.example/', 'example.com/path'] }, 'urls[2]: must be an absolute http or https URL, got "example.com/path"'],
      [{ urls: ['ftp://files.example/x'] }, 'urls[0]: must be an http or https URL, got scheme "ftp"'],
      [{ urls: ['https://ok.example/', '/relative'] }, 'urls[1]: must be an absolute http or https URL'],
      [{ urls: ['https://*.example.com/'] }, 'urls[0]: must name one host'],
      [{ urls: ['https://exa mple.com/'] }, 'urls[0]: must be an absolute http or https URL'],
      [{ urls: [] }, 'urls: must NOT have fewer than 1 items'],
      [{ urls: ['https://ok.example/', 7] }, 'urls[1]: must be string'],
      [{ urls: 'https://ok.example/' }, 'urls: must be array'],
      [{}, 'urls: is required'],
      [{ urls: ['https://ok.example/'], metadata: 'é'.repeat(2049) }, 'metadata: must be at most 4096 bytes'],
      [{ urls: ['https://ok.example/'], status: 'PROCESSED' }, "unknown field 'status'"],
    ];
    for (const [body, msg] of cases) {
      const res = await c.post('/abuse_reports', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.msg, JSON.stringify(body)).toContain(msg);
    }
    expect((await c.post('/abuse_reports', { urls: ['https://ok.example/'], metadata: 'é'.repeat(2048) })).status).toBe(201);
  });

  it('runs the state machine: IGNORE when unserved, PENDING when served, then the operator decides', async () => {
    const c = await svc.account({ abuseReports: true });
    const edgeOwner = await svc.account();
    await edge(edgeOwner, ['served.example.com:443', '*.wild.example.net:443']);
    const created = await report(c, [
      'https://served.example.com/bad', 'https://deep.sub.wild.example.net/x', 'https://nobody.example.org/', 'https://wild.example.net/',
    ]);
    expect(await drainJobs(svc.db)).toBeGreaterThanOrEqual(1);
    const processed = (await c.get(`/abuse_reports/${created.id}`)).body;
    expect(processed.hostnames).toEqual([
      { hostname: 'served.example.com', status: 'PENDING' },
      { hostname: 'deep.sub.wild.example.net', status: 'PENDING' },
      { hostname: 'nobody.example.org', status: 'IGNORE' },
      // `*.wild.example.net` covers subdomains, not the name itself.
      { hostname: 'wild.example.net', status: 'IGNORE' },
    ]);
    expect(processed.status).toBe('PARTIALLY_PROCESSED');
    expect(await jobsOf(created.id)).toEqual([{ state: 'done', attempts: 1, completions: 1 }]);

    const listed = await listAbuseReports(svc.db, { status: 'PARTIALLY_PROCESSED' });
    expect(listed.map((r) => r.id)).toContain(created.id);
    expect(listed.find((r) => r.id === created.id)).toMatchObject({ account_id: c.accountId, processed: true });

    const ban = await decideAbuseHostname(svc.db, created.id, 'Served.Example.com', 'ban');
    expect(ban).toMatchObject({ hostname: 'served.example.com', from: 'PENDING', to: 'BANNED', changed: true });
    expect((await decideAbuseHostname(svc.db, created.id, 'served.example.com', 'ban')).changed).toBe(false);
    await expect(decideAbuseHostname(svc.db, created.id, 'served.example.com', 'ignore')).rejects.toThrow(/is BANNED; --ignore applies to PENDING hostnames/);
    await expect(decideAbuseHostname(svc.db, created.id, 'deep.sub.wild.example.net', 'unban')).rejects.toThrow(/--unban applies to BANNED/);
    await expect(decideAbuseHostname(svc.db, created.id, 'other.example', 'ban')).rejects.toThrow(/has no hostname other.example; its hostnames: served.example.com, /);
    await expect(decideAbuseHostname(svc.db, 'abrp_000000000000000000000000000', 'x', 'ban')).rejects.toThrow(/not found/);

    await decideAbuseHostname(svc.db, created.id, 'deep.sub.wild.example.net', 'ignore');
    const done = (await c.get(`/abuse_reports/${created.id}`)).body;
    expect(done.status).toBe('PROCESSED');
    expect(done.hostnames.map((h: { status: string }) => h.status)).toEqual(['BANNED', 'IGNORE', 'IGNORE', 'IGNORE']);

    // A later report of a banned hostname is BANNED at once.
    const again = await report(await svc.account({ abuseReports: true }), ['https://served.example.com/again']);
    await drainJobs(svc.db);
    expect((await svc.db.query(`SELECT body FROM objects WHERE id = $1`, [again.id])).rows[0].body).toMatchObject({
      status: 'PROCESSED', hostnames: [{ hostname: 'served.example.com', status: 'BANNED' }],
    });

    const unban = await decideAbuseHostname(svc.db, created.id, 'served.example.com', 'unban');
    expect(unban).toMatchObject({ from: 'BANNED', to: 'UNBANNED', changed: true });
    expect((await c.get(`/abuse_reports/${created.id}`)).body.hostnames[0]).toEqual({ hostname: 'served.example.com', status: 'UNBANNED' });
    // Re-banning after a lifted ban is allowed.
    expect((await decideAbuseHostname(svc.db, created.id, 'served.example.com', 'ban')).to).toBe('BANNED');
    await decideAbuseHostname(svc.db, created.id, 'served.example.com', 'unban');
  });

  it('keeps an operator decision made before processing, and a second run of the job changes nothing', async () => {
    const c = await svc.account({ abuseReports: true });
    await edge(await svc.account(), ['early.example.com:443']);
    const created = await report(c, ['https://early.example.com/', 'https://late.example.com/']);
    await decideAbuseHostname(svc.db, created.id, 'early.example.com', 'ignore');
    expect((await c.get(`/abuse_reports/${created.id}`)).body.status).toBe('PARTIALLY_PROCESSED');
    await drainJobs(svc.db);
    const after = (await c.get(`/abuse_reports/${created.id}`)).body;
    expect(after.hostnames).toEqual([{ hostname: 'early.example.com', status: 'IGNORE' }, { hostname: 'late.example.com', status: 'IGNORE' }]);
    expect(after.status).toBe('PROCESSED');

    // The job's effect is conditional on the report's state: running it again is a no-op.
    await svc.db.tx((q) => processAbuseReport(q, { object_id: created.id }));
    expect((await c.get(`/abuse_reports/${created.id}`)).body).toEqual(after);
  });

  it('refuses to add a banned hostname to any edge, directly or through a wildcard, until unbanned', async () => {
    const c = await svc.account({ abuseReports: true });
    const owner = await svc.account();
    const e1 = await edge(owner, ['evil.bantest.example:443', 'keep.bantest.example:443']);
    const created = await report(c, ['https://evil.bantest.example/']);
    await drainJobs(svc.db);
    expect((await c.get(`/abuse_reports/${created.id}`)).body.hostnames).toEqual([{ hostname: 'evil.bantest.example', status: 'PENDING' }]);
    await decideAbuseHostname(svc.db, created.id, 'evil.bantest.example', 'ban');

    // The edge that already served it is not broken by the ban: other changes still go through.
    expect((await owner.patch(`/edges/https/${e1}`, { description: 'still here' })).status).toBe(200);
    expect((await owner.patch(`/edges/https/${e1}`, { hostports: ['keep.bantest.example:443'] })).status).toBe(200);

    const other = await svc.account();
    const banned = [
      () => owner.patch(`/edges/https/${e1}`, { hostports: ['keep.bantest.example:443', 'evil.bantest.example:443'] }),
      () => other.post('/edges/https', { hostports: ['fine.example.org:443', 'EVIL.bantest.example:443'] }),
      () => other.post('/edges/https', { hostports: ['*.bantest.example:443'] }),
    ];
    for (const attempt of banned) {
      const res = await attempt();
      expect(res.status, res.text).toBe(409);
      expect(res.body.error_code).toBe('ERR_HOSTNAME_BANNED');
      expect(res.body.msg).toMatch(/^hostports: \S+ cannot be served: the hostname evil\.bantest\.example is banned after an abuse report/);
      expect(res.body.msg).not.toContain(created.id);
      expect(res.body.details.hostname).toBe('evil.bantest.example');
    }
    expect((await other.get('/edges/https')).body.https_edges).toEqual([]);
    // Neither the parent domain nor a deeper name is the banned hostname.
    const near = await edge(other, ['bantest.example:443', 'a.evil.bantest.example:443']);

    await decideAbuseHostname(svc.db, created.id, 'evil.bantest.example', 'unban');
    expect((await owner.patch(`/edges/https/${e1}`, { hostports: ['keep.bantest.example:443', 'evil.bantest.example:443'] })).status).toBe(200);
    // A wildcard covering it goes through again too: added by the account serving the names under
    // it (over another account's names it would be an overlap, docs/api.md Tenancy).
    expect((await other.delete(`/edges/https/${near}`)).status).toBe(204);
    expect((await owner.post('/edges/https', { hostports: ['*.bantest.example:443'] })).status).toBe(201);
  });

  it('processes reports in the background while a worker runs', async () => {
    const worker = startJobWorker(svc.db, { pollMs: 20 });
    try {
      const c = await svc.account({ abuseReports: true });
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push((await report(c, [`https://bg${i}.example.org/`])).id);
      const deadline = Date.now() + 15_000;
      for (const id of ids) {
        for (;;) {
          const got = (await c.get(`/abuse_reports/${id}`)).body;
          if (got.status === 'PROCESSED') break;
          if (Date.now() > deadline) throw new Error(`report ${id} still ${got.status}`);
          await new Promise((r) => setTimeout(r, 25));
        }
      }
      const { rows } = await svc.db.query('SELECT attempts, completions, finished_by FROM jobs WHERE object_id = ANY($1)', [ids]);
      expect(rows).toHaveLength(5);
      for (const r of rows) expect(r).toEqual({ attempts: 1, completions: 1, finished_by: worker.id });
    } finally {
      await worker.stop();
    }
  });
});
