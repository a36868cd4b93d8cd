import { createServer, type AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/service/app.js';
import { migrate } from '../../src/store/migrate.js';
import { PoolDb } from '../../src/store/pool-db.js';
import { openPglite } from '../../src/store/pglite.js';
import { openPostgres, redactUrl } from '../../src/store/postgres.js';
import { startServe } from '../helpers/cli.js';
import { ENGINES, openTestDb, startTestService, TestClient, type TestService } from '../helpers/service.js';

/** The label values of every sample of a Prometheus text exposition. */
function labelValues(text: string): string[] {
  return [...text.matchAll(/^[a-zA-Z_:][\w:]*\{(.*)\} /gm)].flatMap((m) => [...m[1].matchAll(/="((?:[^"\\]|\\.)*)"/g)].map((v) => v[1]));
}

/** The value of one sample, `name{labels}`, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** A port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

describe.each(ENGINES)('ops routes on %s', (engine) => {
  let svc: TestService;
  let c: TestClient;
  beforeAll(async () => {
    svc = await startTestService(engine);
    c = await svc.account({ abuseReports: true });
  });
  afterAll(async () => { await svc?.close(); });

  it('answers /healthz and /readyz without a version header or key, naming the database', async () => {
    const anon = new TestClient(svc.url, null);
    const health = await anon.request('GET', '/healthz', undefined, { 'service-version': null });
    expect([health.status, health.body]).toEqual([200, { status: 'ok' }]);
    const ready = await anon.request('GET', '/readyz', undefined, { 'service-version': null });
    expect([ready.status, ready.body]).toEqual([200, { status: 'ready', engine, database: svc.db.describe }]);
    expect(ready.headers.get('cache-control')).toBe('no-store');
    // The API itself still demands both.
    expect((await anon.get('/backends/failover')).status).toBe(401);
    expect((await c.request('GET', '/backends/failover', undefined, { 'service-version': null })).status).toBe(400);
  });

  it('answers /readyz 503 with the reason when the migrations are not applied', async () => {
    const { db, drop } = await openTestDb(engine, { blank: true });
    const app = await buildApp({ db });
    try {
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ status: 'not_ready', engine, database: db.describe, reason: expect.stringMatching(/^migrations not applied: 001_init\.sql, /) });
    } finally {
      await app.close();
      await drop();
    }
  });

  it('exports request durations by method, route pattern and status, in-flight requests, the job queue and the pool', async () => {
    const hostname = 'metrics-secret-host.example.com';
    const edge = await c.post('/edges/https', { hostports: [`${hostname}:443`], description: 'a body text never in a label' });
    expect(edge.status).toBe(201);
    expect((await c.get(`/edges/https/${edge.body.id}`)).status).toBe(200);
    expect((await c.get('/nope/' + edge.body.id)).status).toBe(404);
    expect((await new TestClient(svc.url, 'ep_wrong_key').get('/certificate_authorities')).status).toBe(401);
    const report = await c.post('/abuse_reports', { urls: [`https://${hostname}/x`] });
    expect(report.status).toBe(201);

    const res = await fetch(svc.url + '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    expect(sample(text, 'http_request_duration_seconds_count{method="POST",route="/edges/https",status_code="201"}')).toBe(1);
    expect(sample(text, 'http_request_duration_seconds_count{method="GET",route="/edges/https/:id",status_code="200"}')).toBe(1);
    expect(sample(text, 'http_request_duration_seconds_count{method="GET",route="unmatched",status_code="404"}')).toBe(1);
    // A request without a valid key: one label set for every stranger, whatever the method and path.
    expect(sample(text, 'http_request_duration_seconds_count{method="ANY",route="unauthenticated",status_code="4xx"}')).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/edges\/https\/:id",status_code="200"\} \d+$/m);
    // The scrape itself is in flight while it is collected.
    expect(sample(text, 'http_requests_in_flight')).toBe(1);
    expect(sample(text, 'edgeplane_jobs_queue_depth{state="queued"}')).toBe(1);
    expect(sample(text, 'edgeplane_jobs_oldest_age_seconds{state="queued"}')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'edgeplane_db_pool_max_connections')).toBe(engine === 'pglite' ? 1 : 4);
    expect(text).toMatch(/^edgeplane_db_pool_connections\{state="in_use"\} \d+$/m);
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);

    // Label hygiene: nothing that names an account, a key, an object, a host or a body.
    const values = labelValues(text);
    expect(values.length).toBeGreaterThan(20);
    for (const v of values) {
      expect(v).not.toMatch(/[a-z]+_[0-9A-Za-z]{27}/);
      expect(v).not.toMatch(/example\.com|ep_|never in a label/);
    }
    for (const secret of [c.accountId, c.apiKey!, edge.body.id, hostname]) expect(text).not.toContain(secret);
  });

  it('counts the outcomes of the jobs its worker runs', async () => {
    const worked = await startTestService(engine, { jobWorker: { pollMs: 20 } });
    try {
      const k = await worked.account({ abuseReports: true });
      const report = await k.post('/abuse_reports', { urls: ['https://counted.example.net/'] });
      expect(report.status).toBe(201);
      let text = '';
      for (let i = 0; i < 200; i++) {
        text = await (await fetch(worked.url + '/metrics')).text();
        if (sample(text, 'edgeplane_jobs_finished_total{type="abuseReport.process",outcome="done"}') === 1) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(sample(text, 'edgeplane_jobs_finished_total{type="abuseReport.process",outcome="done"}')).toBe(1);
      expect(sample(text, 'edgeplane_jobs_queue_depth{state="queued"}')).toBe(0);
      expect(sample(text, 'edgeplane_jobs_oldest_age_seconds{state="queued"}')).toBe(0);
    } finally {
      await worked.close();
    }
  });

  it('serves no /metrics when metrics are off or collected for a port of their own', async () => {
    for (const metrics of ['off', 'collect'] as const) {
      const app = await buildApp({ db: svc.db, metrics });
      try {
        const k = await svc.account();
        const res = await app.inject({ method: 'GET', url: '/metrics', headers: { 'service-version': '2', authorization: `Bearer ${k.apiKey}` } });
        expect([metrics, res.statusCode, res.json().error_code]).toEqual([metrics, 404, 'ERR_NOT_FOUND']);
        expect(app.metrics === null).toBe(metrics === 'off');
      } finally {
        await app.close();
      }
    }
  });
});

describe('readiness with the database gone', () => {
  it('answers 503 on PGlite once its database is closed, and /healthz still 200', async () => {
    const db = await openPglite(null);
    await migrate(db);
    const app = await buildApp({ db });
    try {
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      await db.close();
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ status: 'not_ready', engine: 'pglite', reason: expect.stringMatching(/^the database is unreachable: /) });
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  it.runIf(!!process.env.DATABASE_URL)('answers 503 on PostgreSQL when the server cannot be reached, naming the target with its password masked', async () => {
    const url = new URL(process.env.DATABASE_URL!);
    url.password = 'hunter2-secret';
    url.port = String(await closedPort());
    const pool = new pg.Pool({ connectionString: url.toString(), max: 2, connectionTimeoutMillis: 1000 });
    pool.on('error', () => {});
    const db = new PoolDb(pool, 'postgres', redactUrl(url.toString()));
    const app = await buildApp({ db });
    try {
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      const body = res.json();
      expect(body).toEqual({ status: 'not_ready', engine: 'postgres', database: expect.stringContaining(':***@'), reason: expect.stringMatching(/^the database is unreachable: .*ECONNREFUSED/) });
      expect(res.body).not.toContain('hunter2');
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      // A scrape still answers: the queue figures are unknown, the rest is there.
      const metrics = await app.inject({ method: 'GET', url: '/metrics' });
      expect(metrics.statusCode).toBe(200);
      expect(metrics.body.split('\n').filter((l) => l.startsWith('edgeplane_jobs_'))).toEqual([]);
    } finally {
      await app.close();
      await db.close();
    }
  });

  it.runIf(!!process.env.DATABASE_URL)('answers 503 on PostgreSQL when its schema is dropped under it', async () => {
    const { db, drop } = await openTestDb('postgres');
    await migrate(db);
    const app = await buildApp({ db });
    try {
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      const schema = /\(schema (\w+)\)/.exec(db.describe)![1];
      await db.query(`DROP SCHEMA ${schema} CASCADE`);
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(res.json().reason).toMatch(/^migrations not applied: 001_init\.sql, /);
      await db.query(`CREATE SCHEMA ${schema}`);
    } finally {
      await app.close();
      await drop();
    }
  });
});

describe('serve --metrics-port', () => {
  it('serves /metrics on its own port and not on the API port', async () => {
    const served = await startServe(['--state', (await import('node:fs')).mkdtempSync((await import('node:path')).join((await import('node:os')).tmpdir(), 'ep-metrics-'))], { env: { EDGEPLANE_METRICS_PORT: '0' } });
    try {
      const m = /"metrics":"(http:\/\/[^"]+)"/.exec(served.logs());
      expect(m).not.toBeNull();
      expect(m![1]).not.toBe(`${served.url}/metrics`);
      const scraped = await fetch(m![1]);
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toMatch(/^# TYPE http_request_duration_seconds histogram$/m);
      expect((await fetch(served.url + '/metrics')).status).toBe(400);
      expect((await fetch(served.url + '/healthz')).status).toBe(200);
    } finally {
      expect(await served.stop('SIGTERM')).toBe(0);
    }
  });
});
