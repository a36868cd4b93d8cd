import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/store/postgres.js';
import { selfSigned } from '../helpers/certs.js';
import { runCli, startServe } from '../helpers/cli.js';
import { TestClient } from '../helpers/service.js';

async function stateWithKey(): Promise<{ state: string; key: string }> {
  const state = mkdtempSync(join(tmpdir(), 'ep-ops-'));
  const created = await runCli(['admin', 'accounts', 'create', '--name', 'ops', '--json', '--state', state]);
  expect(created.code, created.stderr).toBe(0);
  return { state, key: JSON.parse(created.stdout).api_key };
}

/** A connection that sends part of a request's headers and waits; resolves with what it got and when it closed. */
function slowHeaders(url: string): Promise<{ data: string; closedAfterMs: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const started = Date.now();
    let data = '';
    const s: Socket = connect(Number(port), hostname, () => s.write('GET /certificate_authorities HTTP/1.1\r\nHost: x\r\n'));
    s.on('data', (d) => (data += d));
    s.on('error', () => {});
    s.on('close', () => resolve({ data, closedAfterMs: Date.now() - started }));
  });
}

describe('edgeplane serve in operation', () => {
  it('on SIGTERM stops accepting, finishes the request in flight, and exits 0', async () => {
    const { state, key } = await stateWithKey();
    const served = await startServe(['--state', state]);
    const { port } = new URL(served.url);
    const body = JSON.stringify({ backends: [], description: 'sent slowly' });
    const half = Math.floor(body.length / 2);
    // A request whose headers and first half arrived: in flight when the signal comes.
    let answered!: (r: { status: number; body: string }) => void;
    const response = new Promise<{ status: number; body: string }>((resolve) => (answered = resolve));
    const req = httpRequest({
      host: '127.0.0.1', port: Number(port), method: 'POST', path: '/backends/failover',
      headers: { 'service-version': '2', authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => answered({ status: res.statusCode!, body: text }));
    });
    req.on('error', (err) => answered({ status: 0, body: String(err) }));
    req.write(body.slice(0, half));
    await new Promise((r) => setTimeout(r, 300));
    served.child.kill('SIGTERM');
    const exited = new Promise<number | null>((r) => served.child.on('close', (code) => r(code)));
    await waitForLog(served.logs, /shutting down/);

    // No new connections.
    const refused = await new Promise<string>((resolve) => {
      const s = connect(Number(port), '127.0.0.1', () => { s.destroy(); resolve('connected'); });
      s.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');

    // The request in flight completes, stored.
    req.end(body.slice(half));
    const res = await response;
    expect(res.status, res.body).toBe(201);
    expect(JSON.parse(res.body).description).toBe('sent slowly');
    expect(await exited).toBe(0);
    expect(served.logs()).toMatch(/"msg":"stopped"/);
  }, 60_000);

  it('closes connections that send headers too slowly after the header timeout, and refuses connections past the cap', async () => {
    const { state, key } = await stateWithKey();
    const served = await startServe(['--state', state], { env: { EDGEPLANE_HEADERS_TIMEOUT_MS: '500', EDGEPLANE_MAX_CONNECTIONS: '5' } });
    try {
      const slow = Array.from({ length: 5 }, () => slowHeaders(served.url));
      await new Promise((r) => setTimeout(r, 150));
      // The sixth is closed as it arrives, with nothing said.
      const extra = await slowHeaders(served.url);
      expect(extra.data).toBe('');
      const held = await Promise.all(slow);
      for (const h of held) {
        expect(h.data).toMatch(/^HTTP\/1\.1 408 /);
        expect(h.data).toContain('"error_code":"ERR_REQUEST_TIMEOUT"');
        // The header timeout, plus at most the interval Node checks it on: seconds, not a minute and a half.
        expect(h.closedAfterMs).toBeLessThan(5000);
      }
      expect((await new TestClient(served.url, key).get('/certificate_authorities')).status).toBe(200);
    } finally {
      expect(await served.stop()).toBe(0);
    }
  }, 60_000);

  it('serves HTTPS with --tls-cert and --tls-key, and refuses one without the other', async () => {
    const { state, key } = await stateWithKey();
    const dir = mkdtempSync(join(tmpdir(), 'ep-tls-'));
    const { cert, key: tlsKey } = selfSigned();
    writeFileSync(join(dir, 'cert.pem'), cert);
    writeFileSync(join(dir, 'key.pem'), tlsKey, { mode: 0o600 });
    const served = await startServe(['--state', state, '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem')]);
    try {
      expect(served.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const { port } = new URL(served.url);
      const res = await new Promise<{ status: number; body: any; authorized: boolean }>((resolve, reject) => {
        const req = httpsRequest({ host: '127.0.0.1', port: Number(port), path: '/certificate_authorities', ca: cert, headers: { 'service-version': '2', authorization: `Bearer ${key}` } }, (r) => {
          let text = '';
          const authorized = (r.socket as import('node:tls').TLSSocket).authorized;
          r.on('data', (d) => (text += d));
          r.on('end', () => resolve({ status: r.statusCode!, body: JSON.parse(text), authorized }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(res.status).toBe(200);
      expect(res.authorized).toBe(true);
      expect(served.logs()).not.toContain('readable by other users');
      expect(res.body.uri).toBe(`${served.url}/certificate_authorities`);
      // Plain HTTP to the HTTPS port gets nothing served.
      const plain = await fetch(`http://127.0.0.1:${port}/certificate_authorities`).then((r) => r.status, () => 'refused');
      expect(plain).not.toBe(200);
      // The CLI's client over HTTPS: the certificate checked against Node's CAs, with
      // NODE_EXTRA_CA_CERTS; unknown, it is refused naming the API.
      const env = { EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: key };
      const trusted = await runCli(['lock', 'status', '--stack', 'web'], { env: { ...env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') } });
      expect(trusted.stderr).toBe('');
      expect([trusted.code, trusted.stdout]).toEqual([0, 'stack "web": not locked\n']);
      const unknown = await runCli(['lock', 'status', '--stack', 'web'], { env: { ...env, NODE_EXTRA_CA_CERTS: undefined } });
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain(`${served.url}: self-signed certificate`);
    } finally {
      expect(await served.stop()).toBe(0);
    }
    // A key others can read is said (secret stores mounted into containers are often 0644), not refused.
    writeFileSync(join(dir, 'open-key.pem'), tlsKey);
    chmodSync(join(dir, 'open-key.pem'), 0o644);
    const open = await runCli(['serve', '--port', 'none', '--state', state, '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'open-key.pem')]);
    expect(open.stderr).toContain(`warning: --tls-key ${join(dir, 'open-key.pem')} is readable by other users (mode 0644): make it readable by the service only (chmod 600)`);
    const half = await runCli(['serve', '--port', '0', '--state', state, '--tls-cert', join(dir, 'cert.pem')]);
    expect(half.code).toBe(1);
    expect(half.stderr).toContain('--tls-cert and --tls-key go together');
    const missing = await runCli(['serve', '--port', '0', '--state', state, '--tls-cert', join(dir, 'nope.pem'), '--tls-key', join(dir, 'key.pem')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('ENOENT');
    // A file that is not what its flag says is named, not left to OpenSSL's wording.
    writeFileSync(join(dir, 'other-key.pem'), selfSigned().key);
    for (const [args, message] of [
      [['--tls-cert', join(dir, 'key.pem'), '--tls-key', join(dir, 'key.pem')], `--tls-cert ${join(dir, 'key.pem')}: not a PEM certificate chain`],
      [['--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'cert.pem')], `--tls-key ${join(dir, 'cert.pem')}: not a PEM private key`],
      [['--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'other-key.pem')], `--tls-key ${join(dir, 'other-key.pem')} is not the key of the certificate in --tls-cert`],
    ] as const) {
      const bad = await runCli(['serve', '--port', '0', '--state', state, ...args]);
      expect(bad.code, bad.stderr).toBe(1);
      expect(bad.stderr).toContain(message);
    }
  }, 120_000);
});

describe.runIf(!!process.env.DATABASE_URL)('edgeplane serve on PostgreSQL', () => {
  it('names its database in the start-up line, password masked', async () => {
    const schema = 'ep_ops_' + Math.random().toString(36).slice(2, 10);
    const admin = await openPostgres(process.env.DATABASE_URL!, { schema });
    const u = new URL(process.env.DATABASE_URL!);
    u.password = 'pw-not-for-logs';
    u.searchParams.set('options', `-c search_path=${schema}`);
    try {
      const served = await startServe([], { env: { DATABASE_URL: u.toString(), EDGEPLANE_JOBS: 'off' } });
      try {
        const line = served.logs().split('\n').find((l) => l.includes('edgeplane listening on'))!;
        expect(line).toContain(`(database postgres://${u.username}:***@${u.host}${u.pathname}`);
        expect(served.logs()).not.toContain('pw-not-for-logs');
        expect(served.logs()).not.toContain('migrated by a newer edgeplane');
      } finally {
        expect(await served.stop()).toBe(0);
      }
      // A newer version migrated the database meanwhile (a rolling upgrade): this one runs on, and says so.
      await admin.query("INSERT INTO schema_migrations (version, name) VALUES (999, '999_from_the_future.sql')");
      const old = await startServe([], { env: { DATABASE_URL: u.toString(), EDGEPLANE_JOBS: 'off' } });
      try {
        // Logged just after the start-up line.
        for (let i = 0; i < 100 && !old.logs().includes('migrated by a newer'); i++) await new Promise((r) => setTimeout(r, 50));
        expect(old.logs()).toContain('the database was migrated by a newer edgeplane (migration 999 is not this version');
      } finally {
        expect(await old.stop()).toBe(0);
      }
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.close();
    }
  }, 60_000);
});

describe.runIf(!!process.env.DATABASE_URL)('edgeplane serve draining its background job on PostgreSQL', () => {
  it('on SIGTERM finishes the job it is running and exits 0; past the shutdown timeout it exits 1', async () => {
    const schema = 'ep_drain_' + Math.random().toString(36).slice(2, 10);
    const db = await openPostgres(process.env.DATABASE_URL!, { schema });
    const u = new URL(process.env.DATABASE_URL!);
    u.searchParams.set('options', `-c search_path=${schema}`);
    const env = { DATABASE_URL: u.toString(), EDGEPLANE_JOB_POLL_MS: '50' };
    const running = async () => {
      for (let i = 0; i < 1000; i++) {
        const { rows } = await db.query<{ state: string }>("SELECT state FROM jobs WHERE state = 'running'").catch(() => ({ rows: [] as { state: string }[] }));
        if (rows.length) return;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error('no job was ever running');
    };
    try {
      const created = await runCli(['admin', 'accounts', 'create', '--name', 'drain', '--abuse-reports', '--json'], { env: { DATABASE_URL: env.DATABASE_URL } });
      expect(created.code, created.stderr).toBe(0);
      const key = JSON.parse(created.stdout).api_key;

      // Each job waits 2 s once claimed: the signal comes while it runs.
      const served = await startServe([], { env: { ...env, EDGEPLANE_JOB_DELAY_MS: '2000' } });
      const report = await new TestClient(served.url, key).post('/abuse_reports', { urls: ['https://drain.example.com/'] });
      expect(report.status).toBe(201);
      await running();
      expect(await served.stop('SIGTERM')).toBe(0);
      const { rows } = await db.query<{ state: string; completions: number }>('SELECT state, completions FROM jobs');
      expect(rows).toEqual([{ state: 'done', completions: 1 }]);

      // A job longer than the shutdown timeout: the process gives up waiting and says so.
      const slow = await startServe([], { env: { ...env, EDGEPLANE_JOB_DELAY_MS: '30000', EDGEPLANE_SHUTDOWN_TIMEOUT_MS: '500' } });
      expect((await new TestClient(slow.url, key).post('/abuse_reports', { urls: ['https://slow.example.com/'] })).status).toBe(201);
      await running();
      const started = Date.now();
      expect(await slow.stop('SIGTERM')).toBe(1);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(slow.logs()).toContain('killed by timeout');
    } finally {
      await db.query(`DROP SCHEMA ${schema} CASCADE`);
      await db.close();
    }
  }, 120_000);
});

function waitForLog(logs: () => string, re: RegExp, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = () => {
      if (re.test(logs())) return resolve();
      if (Date.now() - started > timeoutMs) return reject(new Error(`no ${re} in:\n${logs()}`));
      setTimeout(tick, 20);
    };
    tick();
  });
}
