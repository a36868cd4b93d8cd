import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeWarnings, runCli, startServe, type Served } from '../helpers/cli.js';
import { cleanupDirs, manifestDir, tempDir } from '../helpers/reconcile.js';
import { TestClient } from '../helpers/service.js';

const MANIFEST = 'kind: FailoverBackend\nname: pool\nbackends: []\n';

describe('scoped API keys from the command line', { timeout: 240_000 }, () => {
  let served: Served;
  let writeKey: string;
  let readKey: string;
  let webKey: string;
  let accountId: string;
  beforeAll(async () => {
    const state = tempDir('ep-scopes-');
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'scopes', '--json', '--state', state]);
    expect(created.code, created.stderr).toBe(0);
    ({ api_key: writeKey, account_id: accountId } = JSON.parse(created.stdout));
    expect(JSON.parse(created.stdout).scope).toBe('write');

    const read = await runCli(['admin', 'keys', 'create', '--account', accountId, '--scope', 'read', '--json', '--state', state]);
    expect(read.code, read.stderr).toBe(0);
    const issued = JSON.parse(read.stdout);
    expect(issued).toMatchObject({ scope: 'read', key_id: expect.stringMatching(/^key_/) });
    readKey = issued.api_key;

    const bad = await runCli(['admin', 'keys', 'create', '--account', accountId, '--scope', 'everything', '--state', state]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--scope must be one of read, write, admin');

    const listed = await runCli(['admin', 'keys', 'list', '--account', accountId, '--json', '--state', state]);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { scope: string }[]).map((k) => k.scope)).toEqual(['write', 'read']);
    const text = await runCli(['admin', 'keys', 'list', '--account', accountId, '--state', state]);
    expect(text.stdout).toMatch(new RegExp(`^${issued.key_id}  scope read  created \\S+Z  active$`, 'm'));

    // A key limited to stack web: shown with its stacks; a bad stack name is refused by name.
    const limited = await runCli(['admin', 'keys', 'create', '--account', accountId, '--stacks', 'web', '--json', '--state', state]);
    expect(limited.code, limited.stderr).toBe(0);
    expect(JSON.parse(limited.stdout)).toMatchObject({ scope: 'write', stacks: ['web'] });
    webKey = JSON.parse(limited.stdout).api_key;
    const badStacks = await runCli(['admin', 'keys', 'create', '--account', accountId, '--stacks', 'Web!', '--state', state]);
    expect(badStacks.code).toBe(1);
    expect(badStacks.stderr).toContain('--stacks: stack names separated by commas');
    const listedAgain = await runCli(['admin', 'keys', 'list', '--account', accountId, '--state', state]);
    expect(listedAgain.stdout).toMatch(new RegExp(`^${JSON.parse(limited.stdout).key_id}  scope write  stacks web  created \\S+Z  active$`, 'm'));

    served = await startServe(['--state', state]);
  }, 120_000);
  afterAll(async () => {
    await served?.stop();
    cleanupDirs();
  });

  it('plan works with a read key; apply with it stops before any write, saying so', async () => {
    const dir = manifestDir({ 'all.yaml': MANIFEST });
    const env = { EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: readKey };
    const plan = await runCli(['plan', dir, '--stack', 'web'], { env });
    expect([0, 2], plan.stdout + plan.stderr).toContain(plan.code);
    expect(plan.stdout).toContain('pool');
    expect(nodeWarnings(plan.stderr)).toEqual([]);

    const apply = await runCli(['apply', dir, '--stack', 'web', '--auto-approve'], { env });
    expect(apply.code, apply.stdout + apply.stderr).toBe(1);
    expect(apply.stderr).toContain('the API key can only read (scope read): apply needs a write key');
    expect(nodeWarnings(apply.stderr)).toEqual([]);

    // Nothing written: no object, no lock, no recorded run.
    const writer = new TestClient(served.url, writeKey, accountId);
    expect((await writer.get('/backends/failover')).body.backends).toEqual([]);
    expect((await writer.get('/stack_locks')).body.stack_locks).toEqual([]);
    expect((await writer.get('/sync_runs')).body.sync_runs).toEqual([]);

    // The same apply with the write key goes through.
    const applied = await runCli(['apply', dir, '--stack', 'web', '--auto-approve'], { env: { ...env, EDGEPLANE_API_KEY: writeKey } });
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    expect((await writer.get('/backends/failover')).body.backends).toHaveLength(1);
  });

  it('a key limited to stack web applies web, and another stack\'s apply stops before any write, saying so', async () => {
    const dir = manifestDir({ 'all.yaml': 'kind: FailoverBackend\nname: limited\nbackends: []\n' });
    const env = { EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: webKey };
    const other = await runCli(['apply', dir, '--stack', 'api', '--auto-approve'], { env });
    expect(other.code, other.stdout + other.stderr).toBe(1);
    expect(other.stderr).toContain('the API key may write only stack web: apply of this stack needs a key of it');
    const mine = await runCli(['apply', dir, '--stack', 'web', '--auto-approve'], { env });
    expect(mine.code, mine.stdout + mine.stderr).toBe(0);
  });
});
