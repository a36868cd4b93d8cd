import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { selectEnvironment, EnvironmentError } from '../../src/reconciler/manifests/environments.js';
import { diffEnvironments } from '../../src/reconciler/manifests/diff-env.js';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';
import { ROOT } from '../helpers/cli.js';

const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }); });

function stack(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'ep-envs-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

const STACK_FILE = `stack: shop
variables:
  domain:
    type: string
    pattern: '[a-z.]+'
  backends:
    type: list(string)
    min: 1
environments:
  staging:
    values: { domain: staging.example.com, backends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs] }
  production:
    values: { domain: example.com, backends: [bkdhr_2ZyQ0dKq7NwUe4Hs9JtB5cVxRmA] }
    overlays: [overlays/production]
`;
const BACKEND = 'kind: FailoverBackend\nname: app\nbackends: {var: backends}\n';
const EDGE = `kind: HTTPSEdge
name: web
description: "costs $\${5} at \${var.domain}"
hostports: ["\${var.domain}:443"]
routes:
  - name: admin
    match_type: path_prefix
    match: /admin/
    backend: { backend_id: app }
`;
const OVERLAY = `overlay: patch
kind: HTTPSEdge
name: web
routes:
  admin:
    ip_restriction: { ip_policy_ids: [ipp_2ZyQ0kR5tWn8Hc3Vb6Lq9Xe2MsA] }
`;

function run(dir: string, env: string) {
  const environment = selectEnvironment(dir, env, { cwd: dir });
  const v = validateDir({ root: dir, stack: environment.stack!, environment, cwd: dir });
  return { ...v, shown: v.problems.map(formatProblem) };
}

describe('environments', () => {
  it('expands variables (typed, in strings, $${ literal) and overlays per environment, with a stack name each', () => {
    const dir = stack({ 'edgeplane.yaml': STACK_FILE, 'backends.yaml': BACKEND, 'edge.yaml': EDGE, 'overlays/production/web.yaml': OVERLAY });
    const staging = run(dir, 'staging');
    expect(staging.shown).toEqual([]);
    const edge = staging.objects.find((o) => o.identity === 'HTTPSEdge/web')!;
    expect(edge.body.hostports).toEqual(['staging.example.com:443']);
    expect(edge.body.description).toBe('costs ${5} at staging.example.com');
    expect(staging.objects.find((o) => o.identity === 'FailoverBackend/app')!.body.backends).toEqual(['bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs']);
    expect(edge.children[0].body.ip_restriction).toBeUndefined();
    const production = run(dir, 'production');
    expect(production.shown).toEqual([]);
    expect(production.objects.find((o) => o.identity === 'HTTPSEdge/web')!.children[0].body.ip_restriction).toEqual({ ip_policy_ids: ['ipp_2ZyQ0kR5tWn8Hc3Vb6Lq9Xe2MsA'] });
    expect(selectEnvironment(dir, 'production').stack).toBe('shop-production');
    // The overlay folder is not read as manifests of the stack.
    expect(production.files.some((f) => f.includes('overlays'))).toBe(false);
  });

  it('diff-env of the example shows exactly hostnames, backends and the extra IP restriction', () => {
    const dir = join(ROOT, 'examples/environments');
    const [a, b] = ['staging', 'production'].map((e) => run(dir, e));
    expect(a.shown).toEqual([]);
    expect(b.shown).toEqual([]);
    const d = diffEnvironments('staging', a.objects, 'production', b.objects);
    expect(d.onlyIn).toEqual([]);
    expect(d.changed.map((c) => `${c.identity} ${c.field}`).sort()).toEqual([
      'FailoverBackend/app backends', 'HTTPSEdge/web hostports', 'HTTPSEdge/web/routes/admin ip_restriction',
    ]);
  });

  it('an unknown variable is an error at its place, with did-you-mean', () => {
    const dir = stack({ 'edgeplane.yaml': STACK_FILE, 'backends.yaml': BACKEND, 'edge.yaml': EDGE.replace('${var.domain}:443', '${var.domian}:443'), 'overlays/production/web.yaml': OVERLAY });
    expect(run(dir, 'staging').shown).toContainEqual(expect.stringMatching(/edge\.yaml:4:13: error: hostports\[0\]: unknown variable "domian" \(did you mean "domain"\?\).*\[unknown-variable\]/));
  });

  it('a ${ that is not a variable is an error (write $${ for a literal)', () => {
    const dir = stack({ 'edgeplane.yaml': STACK_FILE, 'backends.yaml': BACKEND, 'edge.yaml': EDGE.replace('costs $${5}', 'costs ${domain}'), 'overlays/production/web.yaml': OVERLAY });
    expect(run(dir, 'staging').shown).toContainEqual(expect.stringMatching(/edge\.yaml:3:14: error: description: "\$\{domain\}" is not a variable: write \$\{var\.NAME\} \(did you mean \$\{var\.domain\}\?\), or \$\$\{ for a literal/));
  });

  it('a value of the wrong type, a failed check and a missing value are errors in edgeplane.yaml', () => {
    const file = STACK_FILE.replace('domain: staging.example.com', 'domain: 42').replace('backends: [bkdhr_2ZyQ0dKq7NwUe4Hs9JtB5cVxRmA]', 'backends: []').replace('domain: example.com, ', '');
    const dir = stack({ 'edgeplane.yaml': file, 'backends.yaml': BACKEND, 'edge.yaml': EDGE, 'overlays/production/web.yaml': OVERLAY });
    const shown = run(dir, 'staging').shown;
    expect(shown).toContainEqual(expect.stringMatching(/edgeplane\.yaml:11:23: error: environments\.staging\.values\.domain: 42 is not a string \(YAML read 42 as a number: write "42" in quotes\)/));
    expect(shown).toContainEqual(expect.stringMatching(/edgeplane\.yaml:13:25: error: environments\.production\.values\.backends: has 0 items; backends needs at least 1/));
    expect(shown).toContainEqual(expect.stringMatching(/edgeplane\.yaml:3:3: error: variables\.domain: variable domain has no value in environment production: set environments\.production\.values\.domain, or give the variable a default/));
  });

  it('a pattern check fails at the value', () => {
    const dir = stack({ 'edgeplane.yaml': STACK_FILE.replace('domain: example.com', 'domain: EXAMPLE_COM'), 'backends.yaml': BACKEND, 'edge.yaml': EDGE, 'overlays/production/web.yaml': OVERLAY });
    expect(run(dir, 'staging').shown).toContainEqual(expect.stringMatching(/edgeplane\.yaml:13:23: error: environments\.production\.values\.domain: "EXAMPLE_COM" does not match the pattern \[a-z\.\]\+ of domain/));
  });

  it('an unused variable is a warning', () => {
    const dir = stack({ 'edgeplane.yaml': STACK_FILE.replace('variables:\n', 'variables:\n  spare: { type: number, default: 1 }\n'), 'backends.yaml': BACKEND, 'edge.yaml': EDGE, 'overlays/production/web.yaml': OVERLAY });
    const r = run(dir, 'staging');
    expect(r.problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(r.shown).toContainEqual(expect.stringMatching(/edgeplane\.yaml:3:3: warning: variables\.spare: variable spare is not used by any manifest or overlay/));
  });

  it('an unknown environment, or none chosen, is refused naming the environments', () => {
    const dir = stack({ 'edgeplane.yaml': STACK_FILE, 'backends.yaml': BACKEND, 'edge.yaml': EDGE, 'overlays/production/web.yaml': OVERLAY });
    expect(() => selectEnvironment(dir, 'stagng')).toThrow(/no environment "stagng" in .*edgeplane\.yaml:9:1 \(did you mean "staging"\?\); the environments are staging, production/);
    expect(() => selectEnvironment(dir, undefined)).toThrow(EnvironmentError);
    expect(() => selectEnvironment(dir, undefined)).toThrow(/this stack has environments \(staging, production\): choose one with --env NAME/);
  });

  it('an overlay that targets nothing, a child or field the kind does not have, is an error at the overlay', () => {
    const bad = [
      OVERLAY.replace('name: web', 'name: webb'),
      OVERLAY.replace('  admin:', '  admn:'),
      OVERLAY.replace('ip_restriction:', 'ip_restricton:'),
    ];
    const expected = [
      /web\.yaml:3:7: error: name: targets nothing: no HTTPSEdge named "webb" in the manifests \(did you mean "web"\?\)/,
      /web\.yaml:5:3: error: routes\.admn: HTTPSEdge\/web has no HTTPS edge route named "admn" in routes \(did you mean "admin"\?\)/,
      /web\.yaml:6:5: error: routes\.admin\.ip_restricton: is not a field of routes\.admin \(did you mean "ip_restriction"\?\)/,
    ];
    bad.forEach((text, i) => {
      const dir = stack({ 'edgeplane.yaml': STACK_FILE, 'backends.yaml': BACKEND, 'edge.yaml': EDGE, 'overlays/production/web.yaml': text });
      expect(run(dir, 'production').shown).toContainEqual(expect.stringMatching(expected[i]));
    });
  });

  it('a field an overlay wrote is located in the overlay', () => {
    const dir = stack({ 'edgeplane.yaml': STACK_FILE, 'backends.yaml': BACKEND, 'edge.yaml': EDGE, 'overlays/production/web.yaml': OVERLAY.replace('[ipp_2ZyQ0kR5tWn8Hc3Vb6Lq9Xe2MsA]', '[not-an-id]') });
    expect(run(dir, 'production').shown).toContainEqual(expect.stringMatching(/overlays\/production\/web\.yaml:6:39: error: routes\[0\]\.ip_restriction\.ip_policy_ids\[0\]/));
  });

  it('overlay: add adds an object, and is refused for one the base has', () => {
    const add = 'overlay: add\nkind: FailoverBackend\nname: extra\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n';
    const dir = stack({ 'edgeplane.yaml': STACK_FILE, 'backends.yaml': BACKEND, 'edge.yaml': EDGE, 'overlays/production/web.yaml': OVERLAY, 'overlays/production/extra.yaml': add });
    const r = run(dir, 'production');
    expect(r.shown).toEqual([]);
    expect(r.objects.map((o) => o.identity)).toContain('FailoverBackend/extra');
    expect(run(dir, 'staging').objects.map((o) => o.identity)).not.toContain('FailoverBackend/extra');
    const again = stack({ 'edgeplane.yaml': STACK_FILE, 'backends.yaml': BACKEND, 'edge.yaml': EDGE, 'overlays/production/web.yaml': OVERLAY, 'overlays/production/extra.yaml': add.replace('extra', 'app') });
    expect(run(again, 'production').shown).toContainEqual(expect.stringMatching(/extra\.yaml:3:7: error: name: FailoverBackend\/app is in the base manifests already: change it with overlay: patch/));
  });
});
