import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { abuseDecide, abuseList } from '../../src/cli/commands/admin-abuse.js';
import { usersImport, usersRecord } from '../../src/cli/commands/admin-users.js';
import type { Output } from '../../src/cli/output.js';
import { listAbuseReports } from '../../src/service/routes/abuse-reports.js';
import { createAccount } from '../../src/service/auth.js';
import { migrate } from '../../src/store/migrate.js';
import { openPglite } from '../../src/store/pglite.js';
import { runCli, startServe } from '../helpers/cli.js';
import { TestClient } from '../helpers/service.js';

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function capture(): Output & { text: () => string } {
  const lines: string[] = [];
  return { line: (t) => lines.push(t), json: (v) => lines.push(JSON.stringify(v)), error: (t) => lines.push(t), text: () => lines.join('\n') };
}

async function withState<T>(state: string, fn: (db: Awaited<ReturnType<typeof openPglite>>) => Promise<T>): Promise<T> {
  const db = await openPglite(state);
  try {
    await migrate(db);
    return await fn(db);
  } finally {
    await db.close();
  }
}

/**
 * The operator path as a user runs it: `serve` processes reports in its own worker, then the real
 * CLI lists and decides. Spawns are few (each pays a process and PGlite start); the commands' error paths
 * run in-process through the same command functions.
 */
describe('edgeplane admin abuse / users on the embedded engine', () => {
  // The in-process commands choose their engine like the CLI: DATABASE_URL would win over --state.
  const saved = process.env.DATABASE_URL;
  beforeAll(() => { delete process.env.DATABASE_URL; });
  afterAll(() => { if (saved !== undefined) process.env.DATABASE_URL = saved; });

  it('serve processes reports in its worker; the operator lists them, decides, records and imports users', { timeout: 240_000 }, async () => {
    const state = mkdtempSync(join(tmpdir(), 'ep-abuse-cli-'));
    const acct = await withState(state, (db) => createAccount(db, { name: 'abuse-team', abuseReports: true }));

    const served = await startServe(['--state', state], { env: { EDGEPLANE_JOB_POLL_MS: '50' } });
    let reportId: string;
    try {
      const c = new TestClient(served.url, acct.api_key);
      const res = await c.post('/abuse_reports', { urls: ['https://Bad.Example.com/x', 'https://bad.example.com/y'] });
      expect(res.status).toBe(201);
      reportId = res.body.id;
      const processed = await until('the report to be processed', async () => {
        const got = (await c.get(`/abuse_reports/${reportId}`)).body;
        return got.status === 'PENDING' ? undefined : got;
      });
      expect(processed).toMatchObject({ status: 'PROCESSED', hostnames: [{ hostname: 'bad.example.com', status: 'IGNORE' }] });
    } finally {
      expect(await served.stop('SIGTERM')).toBe(0);
    }

    const listed = await runCli(['admin', 'abuse', 'list', '--json', '--state', state]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ id: reportId, account_id: acct.account_id, status: 'PROCESSED', processed: true })]);
    const ban = await runCli(['admin', 'abuse', 'decide', reportId, 'bad.example.com', '--ban', '--state', state]);
    expect(ban.code, ban.stderr).toBe(0);
    expect(ban.stdout.trim()).toBe(`bad.example.com on ${reportId}: IGNORE → BANNED; report is PROCESSED`);

    const file = join(state, 'users.json');
    writeFileSync(file, JSON.stringify([
      { identity_provider: { name: 'Google', url: 'https://accounts.google.com' }, provider_user_id: 'a', email: 'a@example.com' },
      { identity_provider: { name: 'Google', url: 'https://accounts.google.com' }, provider_user_id: 'b', last_login: '2026-01-01T00:00:00Z' },
    ]));
    const imp = await runCli(['admin', 'users', 'import', file, '--account', acct.account_id, '--state', state]);
    expect(imp.code, imp.stderr).toBe(0);
    expect(imp.stdout.trim()).toBe('2 application users: 2 created, 0 updated, 0 unchanged');

    // The same commands in-process: output and refusals.
    const out = capture();
    await abuseList(out, { state });
    expect(out.text()).toContain(`${reportId}  PROCESSED  account ${acct.account_id}`);
    expect(out.text()).toContain('  BANNED    bad.example.com');
    const none = capture();
    await abuseList(none, { status: 'pending', state });
    expect(none.text()).toBe('no PENDING abuse reports');
    await expect(abuseList(capture(), { status: 'DONE', state })).rejects.toThrow('--status: must be one of PENDING, PARTIALLY_PROCESSED, PROCESSED');
    await expect(abuseDecide(capture(), reportId, 'bad.example.com', { ban: true, unban: true, state })).rejects.toThrow('give exactly one of --ban, --unban, --ignore');
    await expect(abuseDecide(capture(), reportId, 'bad.example.com', { ignore: true, state })).rejects.toThrow(`bad.example.com on ${reportId} is BANNED; --ignore applies to PENDING hostnames`);
    const same = capture();
    await abuseDecide(same, reportId, 'bad.example.com', { ban: true, state });
    expect(same.text()).toBe(`bad.example.com on ${reportId} is already BANNED; nothing changed`);

    const record = async (at: string) => {
      const o = capture();
      await usersRecord(o, {
        account: acct.account_id, providerName: 'GitHub', providerUrl: 'https://github.com', providerUserId: '583231',
        username: 'octocat', at, json: true, state,
      });
      return JSON.parse(o.text());
    };
    const r1 = await record('2026-02-01T10:00:00Z');
    expect(r1).toMatchObject({ outcome: 'created', application_user: { username: 'octocat', last_login: '2026-02-01T10:00:00Z' } });
    expect(await record('2026-02-01T10:00:00Z')).toEqual({ ...r1, outcome: 'unchanged' });
    await expect(usersImport(capture(), file, { state })).rejects.toThrow('edgeplane: users[0].account_id: is required\nedgeplane: users[1].account_id: is required');
    const imp2 = capture();
    await usersImport(imp2, file, { account: acct.account_id, json: true, state });
    expect(JSON.parse(imp2.text())).toEqual({ created: 0, updated: 0, unchanged: 2 });

    const reports = await withState(state, (db) => listAbuseReports(db));
    expect(reports[0].hostnames).toEqual([{ hostname: 'bad.example.com', status: 'BANNED' }]);
  });
});
