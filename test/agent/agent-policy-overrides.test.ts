import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncStack, type SyncContext } from '../../src/agent/sync.js';
import type { StackEntry } from '../../src/agent/config.js';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport } from '../../src/client/transport.js';
import { reconcilerConfig } from '../../src/cli/service-config.js';
import { history } from '../../src/cli/commands/sync-record.js';
import { capture } from '../helpers/capture.js';
import { cleanupDirs, EXAMPLES, manifestDir } from '../helpers/reconcile.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

const tag = Math.random().toString(36).slice(2, 7);
/** A stack with the starter policies: an edge whose /admin/ route has no auth (admin-paths-need-auth denies), TLS as given. */
function stack(name: string, tls = ''): string {
  const dir = manifestDir({
    'edgeplane.yaml': `stack: ${name}\npolicies: [policies/]\n`,
    'backend.yaml': 'kind: FailoverBackend\nname: app\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n',
    'web.yaml': `kind: HTTPSEdge\nname: web\nhostports: ["${name}.${tag}.example.com:443"]\n${tls}routes:\n  - name: admin\n    match_type: path_prefix\n    match: /admin/\n    backend: { backend_id: app }\n    circuit_breaker: { tripped_duration: 30 }\n`,
  });
  cpSync(join(EXAMPLES, 'policies'), join(dir, 'policies'), { recursive: true });
  return dir;
}

const settings = (overridePolicies: StackEntry['overridePolicies']): StackEntry => ({
  source: 's', path: '.', mode: 'apply', driftIntervalMs: 60_000, drift: 'report', suspend: false, force: false, allowProtectedChanges: false, overridePolicies,
});

describe.each(ENGINES)('the agent\'s override_policies (%s)', (engine) => {
  let svc: TestService;
  let c: TestClient;
  let client: ApiClient;
  let ctx: SyncContext;
  beforeAll(async () => {
    svc = await startTestService(engine);
    c = await svc.account();
    client = new ApiClient(httpTransport(svc.url, c.apiKey!));
    ctx = { client, holder: 'agent@test', lockTtlSeconds: 60, planConfig: reconcilerConfig({}), env: {}, signal: new AbortController().signal };
  }, 60_000);
  afterAll(async () => { await client?.close(); await svc?.close(); cleanupDirs(); });

  const sync = (stackName: string, dir: string, s: StackEntry) =>
    syncStack(ctx, { stack: stackName, dir, commit: { sha: 'b'.repeat(40) }, trigger: 'commit', settings: s, fetchedAt: Date.now() });
  const runs = async (stackName: string) => (await c.get(`/sync_runs?stack=${stackName}`)).body.sync_runs;
  const edges = async (stackName: string) => (await c.get('/edges/https')).body.https_edges.filter((e: { metadata?: string }) => e.metadata?.includes(`"stack":"${stackName}"`));

  it('a named policy\'s denials are let through: the sync applies, and its run records the override and its reason', async () => {
    const dir = stack('ovr');
    const result = await sync('ovr', dir, settings([{ policy: 'admin-paths-need-auth', reason: 'the admin app checks its own sessions (SEC-88)' }]));
    expect(result).toMatchObject({ outcome: 'applied', recorded: true });
    expect((await runs('ovr'))[0]).toMatchObject({
      outcome: 'applied', trigger: 'commit',
      policy: { denied: 1, warned: 0, overrides: [{ policy: 'admin-paths-need-auth', reason: 'the admin app checks its own sessions (SEC-88)' }] },
    });
    expect(await edges('ovr')).toHaveLength(1);

    // `history` in text: the run's policy counts in its row, each override and its reason under it.
    const out = capture();
    await history(out, 'ovr', { apiUrl: svc.url, apiKey: c.apiKey! });
    const lines = out.text().trimEnd().split('\n');
    expect(lines[0]).toMatch(/^FINISHED\s+OUTCOME\s+TRIGGER\s+COMMIT\s+CHANGES\s+POLICIES\s+BY\s+ERROR$/);
    expect(lines[1]).toMatch(/\sapplied\s+commit\s+bbbbbbbbbb\s+\+3 ~0 ±0 -0\s+1 denied, 0 warned, 1 overridden\s+agent@test/);
    expect(lines[2]).toBe('  overridden: policy admin-paths-need-auth (reason: the admin app checks its own sessions (SEC-88))');
    expect(lines).toHaveLength(3);
  });

  it('a policy that says it cannot be overridden, or a name that is no policy, fails the sync: nothing is applied', async () => {
    const dir = stack('noovr', 'tls_termination: { min_version: "1.0" }\n');
    const locked = await sync('noovr', dir, settings([{ policy: 'admin-paths-need-auth', reason: 'r' }, { policy: 'tls-min-version', reason: 'legacy clients' }]));
    expect(locked).toMatchObject({ outcome: 'failed', reason: 'validation', error: 'agent.yaml override_policies: tls-min-version: this policy says it cannot be overridden (overridable: false); change the manifests instead' });
    const typo = await sync('noovr', dir, settings([{ policy: 'admin-path-need-auth', reason: 'r' }]));
    expect(typo).toMatchObject({ outcome: 'failed', error: expect.stringContaining('admin-path-need-auth: no such policy (did you mean "admin-paths-need-auth"?)') });
    expect((await runs('noovr'))[0]).toMatchObject({ outcome: 'failed', error: expect.stringContaining('override_policies') });
    // Without overrides the denials block it, as before.
    expect(await sync('noovr', dir, settings([]))).toMatchObject({ outcome: 'blocked', error: expect.stringContaining('tls-min-version (1 denied; it cannot be overridden') });
    expect(await edges('noovr')).toEqual([]);
    const out = capture();
    await history(out, 'noovr', { apiUrl: svc.url, apiKey: c.apiKey! });
    const lines = out.text().trimEnd().split('\n');
    expect(lines[1]).toMatch(/\sblocked\s+commit.*\s2 denied, 0 warned\s+agent@test.*apply blocked by 2 policies/);
    expect(lines.some((l) => l.includes('overridden:'))).toBe(false);
  });
});
