import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/cli/commands/apply.js';
import { plan } from '../../src/cli/commands/plan.js';
import { policyTest } from '../../src/cli/commands/policy.js';
import { validate } from '../../src/cli/commands/validate.js';
import { EXIT } from '../../src/cli/exit.js';
import { parsePlan } from '../../src/reconciler/render/json.js';
import type { Plan } from '../../src/reconciler/plan/types.js';
import { capture, exitCode } from '../helpers/capture.js';
import { syncStack } from '../../src/agent/sync.js';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport } from '../../src/client/transport.js';
import { reconcilerConfig } from '../../src/cli/service-config.js';
import { cleanupDirs, EXAMPLES, manifestDir, tempDir } from '../helpers/reconcile.js';
import { startTestService, type TestClient, type TestService } from '../helpers/service.js';

let svc: TestService;
beforeAll(async () => { svc = await startTestService('pglite'); });
afterAll(async () => { await svc?.close(); cleanupDirs(); });

let hosts = 0;
const tag = Math.random().toString(36).slice(2, 7);
/** An edge with routes (`[name, match, extra YAML]`), on a hostport of its own. */
function edge(name: string, routes: [string, string, string?][] = [], extra = ''): string {
  const rs = routes.map(([n, m, more]) => `  - name: ${n}\n    match_type: path_prefix\n    match: ${m}\n    backend: { backend_id: app }\n${more ? more.replace(/^/gm, '    ') + '\n' : ''}`).join('');
  return `kind: HTTPSEdge\nname: ${name}\nhostports: ["${name}-${++hosts}.${tag}.example.com:443"]\n${extra}${rs ? `routes:\n${rs}` : ''}`;
}
const BACKEND = 'kind: FailoverBackend\nname: app\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n';

/** A stack with the starter policies (examples/policies) and these manifests. */
function stack(name: string, manifests: Record<string, string>, policies = 'policies/'): string {
  const dir = manifestDir({ 'edgeplane.yaml': `stack: ${name}\npolicies:\n  - ${policies}\n`, 'backend.yaml': BACKEND, ...manifests });
  cpSync(join(EXAMPLES, 'policies'), join(dir, 'policies'), { recursive: true });
  return dir;
}

let c: TestClient;
let flags: { apiUrl: string; apiKey: string };
beforeAll(async () => {
  c = await svc.account();
  flags = { apiUrl: svc.url, apiKey: c.apiKey! };
});

async function jsonPlan(dir: string, more: Record<string, unknown> = {}): Promise<{ code: number; plan: Plan }> {
  const out = capture();
  const code = await exitCode(() => plan(out, dir, { ...flags, json: true, ...more }));
  return { code, plan: JSON.parse(out.text()) as Plan };
}

describe('loading policies: every problem at file:line:col', () => {
  it('CEL syntax and type errors point into the expression, in any YAML form', async () => {
    const dir = manifestDir({
      'edgeplane.yaml': 'stack: p\npolicies: [policies, nothere/]\n',
      'web.yaml': BACKEND,
      'policies/bad.yaml': [
        'kind: Policy', 'name: block', 'rules:',
        '  - expression: |', '      has(object.oauth) ||', '        has(objcet.saml)', '    message: m',
        '---', 'kind: Policy', 'name: quoted', 'rules:',
        '  - expression: \'object.name == \'\'x\'\' && plan.delete.HTTPSEdge > "5"\'', '    message: m',
        '---', 'kind: Policy', 'name: plain', 'rules:',
        '  - expression: object.name ==', '    message: m',
        '---', 'kind: Policy', 'name: notbool', 'rules:',
        '  - expression: size(changes)', '    message: m',
      ].join('\n') + '\n',
    });
    const out = capture();
    expect(await exitCode(() => validate(out, dir, {}))).toBe(EXIT.error);
    expect(out.errors.map((e) => e.replaceAll(`${dir}/`, ''))).toEqual([
      'edgeplane.yaml:2:22: error: policies[1]: nothere/ is not there (nothere): name a folder or a file of policies, relative to edgeplane.yaml [policy-path]',
      'policies/bad.yaml:6:13: error: rules[0].expression: unknown variable objcet (a rule reads object, live, action, changes, plan) [policy-cel]',
      'policies/bad.yaml:12:42: error: rules[0].expression: no such overload: int > string [policy-cel]',
      'policies/bad.yaml:18:31: error: rules[0].expression: Unexpected token: EOF [policy-cel]',
      'policies/bad.yaml:24:17: error: rules[0].expression: must be a bool expression (true passes); this one gives a int [policy-cel]',
    ]);
  });

  it('the schema: unknown fields and kinds with did-you-mean, a name given twice, a document that is not a policy', async () => {
    const dir = manifestDir({
      'edgeplane.yaml': 'stack: p\npolicies: [policies/]\n',
      'web.yaml': BACKEND,
      'policies/a.yaml': 'kind: Policy\nname: one\nmatch:\n  kinds: [HTTPSEdges]\nrules:\n  - expression: "true"\n    message: m\n    sevrity: warn\n',
      'policies/b.yaml': 'kind: Policy\nname: two\nrules:\n  - expression: "true"\n    message: m\n---\nkind: Policy\nname: two\nrules:\n  - expression: "true"\n    message: m\n---\nkind: HTTPSEdge\nname: x\n',
    });
    const out = capture();
    expect(await exitCode(() => validate(out, dir, {}))).toBe(EXIT.error);
    const errors = out.errors.map((e) => e.replaceAll(`${dir}/`, ''));
    expect(errors).toEqual([
      'policies/a.yaml:4:11: error: match.kinds[0]: must be one of FailoverBackend, CertificateAuthority, HTTPSEdge, HTTPSEdgeRoute (did you mean "HTTPSEdge"?) [policy-schema]',
      'policies/a.yaml:8:5: error: rules[0].sevrity: is not a field of a policy here (did you mean "severity"?) (known: expression, message, severity) [policy-schema]',
      'policies/b.yaml:8:7: error: name: policy "two" is defined twice (first at policies/b.yaml:1:1): names must be unique, --override-policy names one [policy-name]',
      'policies/b.yaml:13:7: error: kind: a policy file holds kind: Policy documents only, not HTTPSEdge (manifests go in the stack\'s other files) [policy-file]',
    ]);
  });

  it('a Policy among the manifests that policies: does not reach is a warning, and is not read as a manifest', async () => {
    const dir = manifestDir({ 'edgeplane.yaml': 'stack: p\n', 'web.yaml': BACKEND + '---\nkind: Policy\nname: lost\nrules:\n  - expression: "false"\n    message: m\n' });
    const out = capture();
    expect(await exitCode(() => validate(out, dir, {}))).toBe(EXIT.ok);
    expect(out.errors).toEqual([expect.stringContaining('web.yaml:5:1: warning: this Policy is not checked: `policies:` of edgeplane.yaml names neither this file nor a folder holding it [policy-path]')]);
  });
});

describe('validate checks the rules that read only the object', () => {
  it('deny is an error and warn a warning at the object; rules over the plan wait for plan', async () => {
    const dir = stack('v', { 'web.yaml': edge('web', [['admin', '/admin/'], ['site', '/']], 'tls_termination: { min_version: "1.3" }\n') });
    const out = capture();
    expect(await exitCode(() => validate(out, dir, {}))).toBe(EXIT.error);
    const lines = out.errors.map((e) => e.slice(e.indexOf('web.yaml')));
    expect(lines).toEqual([
      'web.yaml:6:5: error: HTTPSEdge/web/routes/admin: policy admin-paths-need-auth: a route to an admin path needs oauth, oidc, saml or ip_restriction [policy]',
      'web.yaml:6:5: warning: HTTPSEdge/web/routes/admin: policy circuit-breaker-on-failover: a route to a failover backend should have a circuit_breaker [policy]',
      'web.yaml:10:5: warning: HTTPSEdge/web/routes/site: policy circuit-breaker-on-failover: a route to a failover backend should have a circuit_breaker [policy]',
    ]);
    // The circuit breaker rule reads the reference as the plan shows it (FailoverBackend/app): a warning, and valid.
    const withBreaker = stack('v2', { 'web.yaml': edge('web', [['site', '/']]) });
    const ok = capture();
    expect(await exitCode(() => validate(ok, withBreaker, {}))).toBe(EXIT.ok);
    expect(ok.errors).toEqual([expect.stringMatching(/web\.yaml:5:5: warning: HTTPSEdge\/web\/routes\/site: policy circuit-breaker-on-failover: a route to a failover backend should have a circuit_breaker \[policy\]$/)]);
    expect(ok.lines.join('\n')).toContain('valid (1 warning)');
  });
});

describe('plan and apply', () => {
  it('a denial: plan exits 3 with the results in every form; apply refuses; an override with its reason goes ahead and is recorded', async () => {
    const dir = stack('deny', { 'web.yaml': edge('web', [['admin', '/admin/'], ['site', '/', 'circuit_breaker: { tripped_duration: 10 }']]) });
    // Text: the step's line and the block of policies.
    const text = capture();
    expect(await exitCode(() => plan(text, dir, flags))).toBe(EXIT.blocked);
    const t = text.text();
    expect(t).toContain('    ! policy admin-paths-need-auth denies: a route to an admin path needs oauth, oidc, saml or ip_restriction');
    expect(t).toContain('policy admin-paths-need-auth denies (1 object); apply needs --override-policy admin-paths-need-auth --reason TEXT');
    expect(t).toContain('  denied: admin-paths-need-auth: HTTPSEdge/web/routes/admin (create): a route to an admin path needs oauth, oidc, saml or ip_restriction');
    expect(t).toContain('Policies: 1 policy denies, 1 policy warns (5 checked)');
    // JSON: per step and for the plan.
    const { code, plan: p } = await jsonPlan(dir);
    expect(code).toBe(EXIT.blocked);
    expect(p.policy!.checked).toEqual(['admin-paths-need-auth', 'cap-edge-deletes', 'circuit-breaker-on-failover', 'no-wildcard-hostports', 'tls-min-version']);
    expect(p.policy!.outcomes).toEqual([
      { policy: 'admin-paths-need-auth', denied: 1, warned: 0, overridable: true },
      { policy: 'circuit-breaker-on-failover', denied: 0, warned: 1, overridable: true },
    ]);
    expect(p.policy!.results[0]).toEqual({ policy: 'admin-paths-need-auth', rule: 0, severity: 'deny', message: 'a route to an admin path needs oauth, oidc, saml or ip_restriction', identity: 'HTTPSEdge/web/routes/admin', action: 'create', step: 'HTTPSEdge/web/routes/admin:create' });
    expect(p.steps.find((s) => s.id === 'HTTPSEdge/web/routes/admin:create')!.policy).toEqual([
      { policy: 'admin-paths-need-auth', rule: 0, severity: 'deny', message: 'a route to an admin path needs oauth, oidc, saml or ip_restriction', action: 'create' },
      { policy: 'circuit-breaker-on-failover', rule: 0, severity: 'warn', message: 'a route to a failover backend should have a circuit_breaker', action: 'create' },
    ]);
    expect(p.steps.find((s) => s.id === 'HTTPSEdge/web/routes/site:create')!.policy).toBeUndefined();
    // Markdown: a section at the top, the denial first.
    const md = capture();
    expect(await exitCode(() => plan(md, dir, { ...flags, markdown: true }))).toBe(EXIT.blocked);
    const m = md.text();
    expect(m.indexOf('#### ⛔ Policies: 1 policy denies, 1 policy warns (5 checked)')).toBeLessThan(m.indexOf('**Plan:'));
    expect(m.indexOf('| ⛔ `admin-paths-need-auth` |')).toBeLessThan(m.indexOf('| ⚠️ `circuit-breaker-on-failover` |'));
    expect(m).toContain('`--override-policy admin-paths-need-auth --reason TEXT`');

    // apply refuses, and records the refusal with what the policies found.
    const refused = capture();
    expect(await exitCode(() => apply(refused, dir, { ...flags, autoApprove: true }))).toBe(EXIT.blocked);
    expect((await c.get('/sync_runs?stack=deny')).body.sync_runs[0]).toMatchObject({ outcome: 'blocked', policy: { denied: 1, warned: 1, overrides: [] } });

    // An override: named wrong, or without a reason, is refused before planning.
    expect(await exitCode(() => plan(capture(), dir, { ...flags, overridePolicy: ['admin-path-need-auth'], reason: 'x' }))).toBe(EXIT.error);
    await expect(plan(capture(), dir, { ...flags, overridePolicy: ['admin-path-need-auth'], reason: 'x' })).rejects.toThrow('--override-policy admin-path-need-auth: no such policy (did you mean "admin-paths-need-auth"?)');
    await expect(plan(capture(), dir, { ...flags, overridePolicy: ['admin-paths-need-auth'] })).rejects.toThrow('needs --reason TEXT');
    const reason = 'INC-42: the admin app has its own login until Friday';
    const over = { ...flags, overridePolicy: ['admin-paths-need-auth'], reason };
    const shown = await jsonPlan(dir, over);
    expect(shown.code).toBe(EXIT.ok);
    expect(shown.plan.policy!.outcomes[0]).toEqual({ policy: 'admin-paths-need-auth', denied: 1, warned: 0, overridable: true, override: { reason } });
    expect(shown.plan.policy!.results[0].overridden).toBe(true);
    const applied = capture();
    expect(await exitCode(() => apply(applied, dir, { ...over, autoApprove: true }))).toBe(EXIT.ok);
    expect(applied.errors).toContain(`warning: policy admin-paths-need-auth denies 1 time; going ahead because of --override-policy (reason: ${reason})`);
    const run = (await c.get('/sync_runs?stack=deny')).body.sync_runs[0];
    expect(run).toMatchObject({ outcome: 'applied', policy: { denied: 1, warned: 1, overrides: [{ policy: 'admin-paths-need-auth', reason }] } });
    const full = (await c.get(`/sync_runs/${run.id}`)).body;
    expect(full.plan_markdown).toContain('⏭️ `admin-paths-need-auth`');
    expect(full.plan_markdown).toContain('the admin app has its own login until Friday');
  });

  it('a saved plan keeps its verdict: apply --plan refuses a denial, and takes an override given then', async () => {
    const dir = stack('saved', { 'web.yaml': edge('web', [], 'tls_termination: { min_version: "1.1" }\n') + '---\n' + edge('other', [['admin', '/admin/']]) });
    const file = join(tempDir(), 'plan.json');
    expect(await exitCode(() => plan(capture(), dir, { ...flags, out: file }))).toBe(EXIT.blocked);
    const saved = parsePlan(readFileSync(file, 'utf8'));
    expect(saved.policy!.outcomes.map((o) => [o.policy, o.denied, o.overridable])).toEqual([['admin-paths-need-auth', 1, true], ['tls-min-version', 1, false], ['circuit-breaker-on-failover', 0, true]]);
    expect(await exitCode(() => apply(capture(), undefined, { ...flags, plan: file, autoApprove: true }))).toBe(EXIT.blocked);
    // tls-min-version cannot be overridden, here or at plan time.
    await expect(apply(capture(), undefined, { ...flags, plan: file, autoApprove: true, overridePolicy: ['tls-min-version'], reason: 'r' })).rejects.toThrow('--override-policy tls-min-version: this policy says it cannot be overridden');
    await expect(plan(capture(), dir, { ...flags, overridePolicy: ['tls-min-version'], reason: 'r' })).rejects.toThrow('cannot be overridden');
    writeFileSync(join(dir, 'web.yaml'), edge('web', [], 'tls_termination: { min_version: "1.2" }\n') + '---\n' + edge('other', [['admin', '/admin/']]));
    expect(await exitCode(() => plan(capture(), dir, { ...flags, out: file }))).toBe(EXIT.blocked);
    const out = capture();
    expect(await exitCode(() => apply(out, undefined, { ...flags, plan: file, autoApprove: true, overridePolicy: ['admin-paths-need-auth'], reason: 'approved in review' }))).toBe(EXIT.ok);
    const run = (await c.get('/sync_runs?stack=saved')).body.sync_runs[0];
    expect(run.policy.overrides).toEqual([{ policy: 'admin-paths-need-auth', reason: 'approved in review' }]);
  });

  it('a rule over the plan (cap-edge-deletes) counts deletes per kind, routes deleted with their edge included', async () => {
    const edges = Array.from({ length: 7 }, (_, i) => edge(`e${i}`, [['r', '/', 'circuit_breaker: { tripped_duration: 10 }']])).join('---\n');
    const dir = stack('cap', { 'edges.yaml': edges });
    expect(await exitCode(() => apply(capture(), dir, { ...flags, autoApprove: true }))).toBe(EXIT.ok);
    // A destroy deletes the objects still in the manifests: counted too.
    const destroying = await jsonPlan(dir, { destroy: true });
    expect(destroying.code).toBe(EXIT.blocked);
    expect(destroying.plan.policy!.outcomes.map((o) => o.policy)).toEqual(['cap-edge-deletes']);
    writeFileSync(join(dir, 'edges.yaml'), edges.split('---\n')[0]);
    // Six routes go with their six edges: counted as deleted routes (a rule that says otherwise would fail).
    writeFileSync(join(dir, 'policies', 'count.yaml'), 'kind: Policy\nname: count\nrules:\n  - expression: plan.delete.HTTPSEdgeRoute == 6 && plan.delete.HTTPSEdge == 6 && plan.create.HTTPSEdge == 0\n    message: counted otherwise\n');
    // The safety threshold would stop it too; policies are checked whatever it says.
    const { code, plan: p } = await jsonPlan(dir);
    expect(code).toBe(EXIT.blocked);
    expect(p.policy!.results).toEqual([{ policy: 'cap-edge-deletes', rule: 0, severity: 'deny', message: 'at most 5 edges may be deleted in one plan' }]);
    const ok = await jsonPlan(dir, { overridePolicy: ['cap-edge-deletes'], reason: 'decommissioning the old region', force: true });
    expect(ok.plan.policy!.outcomes).toEqual([{ policy: 'cap-edge-deletes', denied: 1, warned: 0, overridable: true, override: { reason: 'decommissioning the old region' } }]);
  });

  it('rules read action, changes and live; a rule that cannot be evaluated fails (closed)', async () => {
    const dir = manifestDir({
      'edgeplane.yaml': 'stack: vars\npolicies: [rules.yaml]\n',
      'backend.yaml': BACKEND,
      'web.yaml': edge('web', [], 'description: first\n'),
      'rules.yaml': [
        'kind: Policy', 'name: frozen-description', 'match: { kinds: [HTTPSEdge] }', 'rules:',
        '  - expression: live == null || live.description != "first" || !("description" in changes)', '    message: the first description stays', '    severity: warn',
        '  - expression: action in ["create", "update", "none"]', '    message: never replaced or deleted',
        '---', 'kind: Policy', 'name: needs-tls-field', 'match: { kinds: [HTTPSEdge] }', 'rules:',
        '  - expression: object.tls_termination.min_version == "1.3"', '    message: TLS 1.3', '    severity: warn',
      ].join('\n') + '\n',
    });
    const first = await jsonPlan(dir);
    expect(first.code).toBe(EXIT.ok);
    expect(first.plan.policy!.results).toEqual([
      { policy: 'needs-tls-field', rule: 0, severity: 'warn', message: 'TLS 1.3', identity: 'HTTPSEdge/web', action: 'create', step: 'HTTPSEdge/web:create', error: 'No such key: tls_termination' },
    ]);
    expect(await exitCode(() => apply(capture(), dir, { ...flags, autoApprove: true }))).toBe(EXIT.ok);
    writeFileSync(join(dir, 'web.yaml'), readFileSync(join(dir, 'web.yaml'), 'utf8').replace('description: first', 'description: second'));
    const second = await jsonPlan(dir);
    expect(second.plan.policy!.results.map((r) => [r.policy, r.rule, r.action])).toEqual([['frozen-description', 0, 'update'], ['needs-tls-field', 0, 'update']]);
    // Deleted: the object is the live one that goes, action delete.
    rmSync(join(dir, 'web.yaml'));
    writeFileSync(join(dir, 'none.yaml'), '');
    const third = await jsonPlan(dir);
    expect(third.code).toBe(EXIT.blocked);
    expect(third.plan.policy!.results.map((r) => [r.policy, r.rule, r.identity, r.action])).toEqual([['frozen-description', 1, 'HTTPSEdge/web', 'delete'], ['needs-tls-field', 0, 'HTTPSEdge/web', 'delete']]);
  });
});

describe('the agent', () => {
  it('a sync checks the policies: a denial is a blocked run, recorded with what they found; nothing is applied', async () => {
    const dir = stack('agent', { 'web.yaml': edge('web', [['admin', '/admin/']]) });
    const client = new ApiClient(httpTransport(svc.url, c.apiKey!));
    const settings = { source: 's', path: '.', mode: 'apply' as const, driftIntervalMs: 60_000, drift: 'report' as const, suspend: false, force: false, allowProtectedChanges: false };
    const result = await syncStack(
      { client, holder: 'agent@test', lockTtlSeconds: 60, planConfig: reconcilerConfig({}), env: {}, signal: new AbortController().signal },
      { stack: 'agent', dir, commit: { sha: 'a'.repeat(40) }, trigger: 'commit', settings, fetchedAt: Date.now() },
    );
    expect(result).toMatchObject({ outcome: 'blocked', error: expect.stringContaining('apply blocked by a policy: admin-paths-need-auth (1 denied; apply needs --override-policy admin-paths-need-auth --reason TEXT)') });
    expect((await c.get('/sync_runs?stack=agent')).body.sync_runs[0]).toMatchObject({ outcome: 'blocked', trigger: 'commit', policy: { denied: 1, warned: 1, overrides: [] } });
    expect((await c.get('/edges/https')).body.https_edges.filter((e: { metadata?: string }) => e.metadata?.includes('"stack":"agent"'))).toEqual([]);
    await client.close();
  });
});

describe('edgeplane policy test', () => {
  it('the starter set passes its own examples', async () => {
    const out = capture();
    expect(await exitCode(() => policyTest(out, join(EXAMPLES, 'policies'), {}))).toBe(EXIT.ok);
    expect(out.lines).toEqual([
      'ok   admin-paths-need-auth: 3 pass, 1 fail examples',
      'ok   cap-edge-deletes: 2 pass, 2 fail examples',
      'ok   circuit-breaker-on-failover: 2 pass, 2 fail examples',
      'ok   no-wildcard-hostports: 2 pass, 1 fail examples',
      'ok   tls-min-version: 3 pass, 2 fail examples',
      '5 policies, 20 examples: all as expected',
    ]);
  });

  it('an example that comes out otherwise fails the run, at its place; a fail example the policy does not match too', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'p.yaml'), [
      'kind: Policy', 'name: no-wildcards', 'match: { kinds: [HTTPSEdge] }', 'rules:',
      '  - expression: object.hostports.all(h, !h.startsWith("*."))', '    message: no wildcards',
      'examples:', '  pass:', '    - { kind: HTTPSEdge, name: a, hostports: ["*.x.com:443"] }',
      '  fail:', '    - { kind: HTTPSEdgeRoute, name: r }', '    - { kind: HTTPSEdge, name: b, hostports: ["*.x.com:443"] }',
    ].join('\n') + '\n');
    const out = capture();
    expect(await exitCode(() => policyTest(out, dir, {}))).toBe(EXIT.error);
    expect(out.lines.map((l) => l.replace(`${dir}/`, ''))).toEqual([
      'FAIL no-wildcards: 1 pass, 2 fail examples',
      expect.stringMatching(/p\.yaml:9:7: examples\.pass\[0\]: rules\[0\] failed \("no wildcards"\)$/),
      expect.stringMatching(/p\.yaml:11:7: examples\.fail\[0\]: not matched by the policy \(match\.kinds\): a fail example must be one the policy checks$/),
      '1 policy, 3 examples: 2 not as expected',
    ]);
  });
});
