import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/store/postgres.js';
import { ROOT, runCli, startServe } from '../helpers/cli.js';
import { TestClient } from '../helpers/service.js';

describe('edgeplane serve + admin on the embedded engine', () => {
  it('creates an account, serves it, refuses a second opener, revokes keys and shuts down cleanly', async () => {
    const state = mkdtempSync(join(tmpdir(), 'ep-cli-'));
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'team-a', '--json', '--state', state]);
    expect(created.code).toBe(0);
    const issued = JSON.parse(created.stdout);
    expect(issued).toEqual({ account_id: expect.stringMatching(/^acct_/), api_key: expect.stringMatching(/^ep_/), key_id: expect.stringMatching(/^key_/), scope: 'write' });

    const second = await runCli(['admin', 'keys', 'create', '--account', issued.account_id, '--json', '--state', state]);
    expect(second.code).toBe(0);
    const key2 = JSON.parse(second.stdout);

    const text = await runCli(['admin', 'accounts', 'create', '--name', 'team-b'], { env: { EDGEPLANE_STATE: state } });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/API key key_\w+ \(scope write\): ep_\S+/);

    const served = await startServe(['--state', state]);
    try {
      expect(served.logs()).toContain(`edgeplane listening on ${served.url}`);
      const c = new TestClient(served.url, issued.api_key);
      const res = await c.post('/backends/failover', { backends: [] });
      expect(res.status).toBe(201);
      expect((await new TestClient(served.url, key2.api_key).get('/backends/failover')).body.backends).toHaveLength(1);

      // The state directory is locked by the server: admin must not open it.
      const blocked = await runCli(['admin', 'keys', 'revoke', key2.key_id, '--state', state]);
      expect(blocked.code).toBe(1);
      expect(blocked.stderr).toContain(`serving at ${served.url}`);
      // Advice an admin command can follow (it takes no --api-url: accounts and keys are not in the API).
      expect(blocked.stderr).toContain('Stop that process, run the admin command, then start it again');
      expect(blocked.stderr).not.toContain('--api-url');
      expect(served.logs()).not.toContain(issued.api_key);
    } finally {
      expect(await served.stop('SIGTERM')).toBe(0);
    }
    expect(existsSync(join(state, 'lock'))).toBe(false);

    const revoked = await runCli(['admin', 'keys', 'revoke', key2.key_id, '--state', state]);
    expect(revoked.code).toBe(0);

    // Listing: accounts with their active keys, an account's keys with their dates; never a key or its hash.
    const accounts = await runCli(['admin', 'accounts', 'list', '--json', '--state', state]);
    expect(accounts.code, accounts.stderr).toBe(0);
    const listed = JSON.parse(accounts.stdout) as { id: string; name: string; active_keys: number }[];
    expect(listed.find((a) => a.id === issued.account_id)).toMatchObject({ name: 'team-a', active_keys: 1, abuse_reports: false, created_at: expect.stringMatching(/Z$/) });
    expect(listed.map((a) => a.name)).toEqual(expect.arrayContaining(['team-a', 'team-b']));
    const keyList = await runCli(['admin', 'keys', 'list', '--account', issued.account_id, '--state', state]);
    expect(keyList.code, keyList.stderr).toBe(0);
    expect(keyList.stdout).toMatch(new RegExp(`^${issued.key_id}  scope write  created \\S+Z  active$`, 'm'));
    expect(keyList.stdout).toMatch(new RegExp(`^${key2.key_id}  scope write  created \\S+Z  revoked \\S+Z$`, 'm'));
    expect(accounts.stdout + keyList.stdout).not.toMatch(/ep_|[0-9a-f]{64}/);
    const unknown = await runCli(['admin', 'keys', 'list', '--account', 'acct_nope', '--state', state]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('account acct_nope does not exist');

    // Abuse-report access is granted and taken away on an existing account.
    const flagOf = async () => (JSON.parse((await runCli(['admin', 'accounts', 'list', '--json', '--state', state])).stdout) as { id: string; abuse_reports: boolean }[])
      .find((a) => a.id === issued.account_id)!.abuse_reports;
    expect((await runCli(['admin', 'accounts', 'update', issued.account_id, '--abuse-reports', '--state', state])).code).toBe(0);
    expect(await flagOf()).toBe(true);
    expect((await runCli(['admin', 'accounts', 'update', issued.account_id, '--no-abuse-reports', '--state', state])).code).toBe(0);
    expect(await flagOf()).toBe(false);
    const nothing = await runCli(['admin', 'accounts', 'update', issued.account_id, '--state', state]);
    expect([nothing.code, nothing.stderr]).toEqual([1, expect.stringContaining('nothing to change')]);
    expect((await runCli(['admin', 'accounts', 'update', 'acct_nope', '--abuse-reports', '--state', state])).stderr).toContain('account acct_nope does not exist');
    const again = await runCli(['admin', 'keys', 'revoke', key2.key_id, '--state', state]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no active API key ${key2.key_id}`);

    const restarted = await startServe(['--state', state]);
    try {
      expect((await new TestClient(restarted.url, key2.api_key).get('/backends/failover')).status).toBe(401);
      expect((await new TestClient(restarted.url, issued.api_key).get('/backends/failover')).body.backends).toHaveLength(1);
    } finally {
      expect(await restarted.stop('SIGINT')).toBe(0);
    }
  }, 240_000);

  it('a plan beside serve on a new state directory goes through the server, with the directory\'s own key', async () => {
    const state = mkdtempSync(join(tmpdir(), 'ep-beside-'));
    const served = await startServe(['--state', state]);
    try {
      const plan = await runCli(['plan', join(ROOT, 'examples', 'small'), '--state', state]);
      expect(plan.code, plan.stderr).toBe(0);
      expect(plan.stdout).toContain(`on ${served.url}`);
      expect(plan.stdout).toContain('Plan: 5 to create, 0 to update, 0 to delete');
      expect(served.logs()).not.toMatch(/ep_[A-Za-z0-9]{20,}/); // the key is not logged
    } finally {
      expect(await served.stop('SIGTERM')).toBe(0);
    }
  }, 120_000);

  it('serve on a port in use says so and exits 1, releasing the state directory', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    const port = (taken.address() as AddressInfo).port;
    const state = mkdtempSync(join(tmpdir(), 'edgeplane-busy-'));
    try {
      const res = await runCli(['serve', '--port', String(port), '--state', state]);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain('EADDRINUSE');
      // Released: the next command opens the same directory.
      const next = await runCli(['admin', 'accounts', 'create', '--name', 'after', '--state', state]);
      expect(next.code, next.stderr).toBe(0);
    } finally {
      taken.close();
    }
  }, 120_000);

  it('prints its version (the package\'s) with --version and -V, and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    for (const flag of ['--version', '-V']) {
      const res = await runCli([flag]);
      expect(res.code).toBe(0);
      expect(res.stdout.trim()).toBe(version);
    }
  });

  it('explains bad usage', async () => {
    const res = await runCli(['admin', 'accounts', 'create']);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("required option '--name <name>' not specified");
    const state = mkdtempSync(join(tmpdir(), 'ep-admin-usage-'));
    for (const name of ['', '   ', 'a\tb', 'x'.repeat(101)]) {
      const bad = await runCli(['admin', 'accounts', 'create', '--name', name, '--state', state]);
      expect(bad.code, JSON.stringify(name)).toBe(1);
      expect(bad.stderr).toContain('--name must be 1 to 100 characters');
    }
    // A key pasted where its id belongs: refused, and not printed back.
    const key = 'ep_' + 'k'.repeat(32);
    const revoke = await runCli(['admin', 'keys', 'revoke', key, '--state', state]);
    expect(revoke.code).toBe(1);
    expect(revoke.stderr).toContain("give the key's id");
    expect(revoke.stdout + revoke.stderr).not.toContain(key);
  });
});

describe.runIf(!!process.env.DATABASE_URL)('edgeplane serve + admin on PostgreSQL', () => {
  it('uses DATABASE_URL for both, and two servers share the data', async () => {
    const schema = 'ep_cli_' + Math.random().toString(36).slice(2, 10);
    const admin = await openPostgres(process.env.DATABASE_URL!, { schema });
    const url = `${process.env.DATABASE_URL}${process.env.DATABASE_URL!.includes('?') ? '&' : '?'}options=-c%20search_path%3D${schema}`;
    try {
      const created = await runCli(['admin', 'accounts', 'create', '--name', 'pg', '--json'], { env: { DATABASE_URL: url } });
      expect(created.code).toBe(0);
      const { api_key } = JSON.parse(created.stdout);
      const [a, b] = await Promise.all([startServe([], { env: { DATABASE_URL: url } }), startServe([], { env: { DATABASE_URL: url } })]);
      try {
        const res = await new TestClient(a.url, api_key).post('/backends/failover', { backends: [] });
        expect(res.status).toBe(201);
        const got = await new TestClient(b.url, api_key).get(`/backends/failover/${res.body.id}`);
        expect(got.status).toBe(200);
        expect(got.body.id).toBe(res.body.id);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.close();
    }
  }, 120_000);
});
