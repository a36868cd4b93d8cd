import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { cleanupDirs, EXAMPLES, manifestDir, tempDir } from '../helpers/reconcile.js';

const BACKEND = 'kind: FailoverBackend\nname: app\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n';
const EDGE = `kind: HTTPSEdge\nname: web\nhostports: ["web.policies.example.com:443"]\nroutes:\n  - name: admin\n    match_type: path_prefix\n    match: /admin/\n    backend: { backend_id: app }\n    circuit_breaker: { tripped_duration: 10 }\n`;

/** The `edgeplane` process with the starter policies: policy test, validate, plan's exit 3, apply with an override, the record. */
describe('policies from the command line', { timeout: 240_000 }, () => {
  afterAll(() => cleanupDirs());

  it('policy test, validate, plan (exit 3), apply refused then overridden, and the override in the history', async () => {
    const tested = await runCli(['policy', 'test', join(EXAMPLES, 'policies')]);
    expect(tested.code, tested.stderr).toBe(0);
    expect(tested.stdout).toContain('5 policies, 20 examples: all as expected');

    const env = { EDGEPLANE_STATE: tempDir('ep-policies-state-') };
    const dir = manifestDir({ 'edgeplane.yaml': 'stack: guarded\npolicies: [policies/]\n', 'backend.yaml': BACKEND, 'web.yaml': EDGE });
    cpSync(join(EXAMPLES, 'policies'), join(dir, 'policies'), { recursive: true });

    const valid = await runCli(['validate', dir], { env });
    expect(valid.code).toBe(1);
    expect(valid.stderr).toMatch(/web\.yaml:5:5: error: HTTPSEdge\/web\/routes\/admin: policy admin-paths-need-auth: a route to an admin path needs oauth, oidc, saml or ip_restriction \[policy\]/);

    const planned = await runCli(['plan', dir], { env });
    expect(planned.code, planned.stderr).toBe(3);
    expect(planned.stdout).toContain('policy admin-paths-need-auth denies (1 object); apply needs --override-policy admin-paths-need-auth --reason TEXT');

    const refused = await runCli(['apply', dir, '--auto-approve'], { env });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('apply blocked by a policy: admin-paths-need-auth');

    const help = await runCli(['apply', '--help']);
    expect(help.stdout).toContain('--override-policy <name>');

    const applied = await runCli(['apply', dir, '--auto-approve', '--override-policy', 'admin-paths-need-auth', '--reason', 'staff VPN only until the SSO move'], { env });
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).toContain('going ahead because of --override-policy (reason: staff VPN only until the SSO move)');
    const history = JSON.parse((await runCli(['history', 'guarded', '--json'], { env })).stdout);
    expect(history.map((r: { outcome: string; policy: unknown }) => [r.outcome, r.policy])).toEqual([
      ['applied', { denied: 1, warned: 0, overrides: [{ policy: 'admin-paths-need-auth', reason: 'staff VPN only until the SSO move' }] }],
      ['blocked', { denied: 1, warned: 0, overrides: [] }],
    ]);
  });
});
