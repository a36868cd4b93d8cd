import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

const EXAMPLE = 'examples/environments';
const state = mkdtempSync(join(tmpdir(), 'ep-envs-cli-'));
afterAll(() => rmSync(state, { recursive: true, force: true }));

describe('edgeplane with environments (real processes, embedded)', () => {
  it('applies each environment into its own stack; plan --env all finds nothing left; diff-env shows the three differences', { timeout: 120_000 }, async () => {
    const noEnv = await runCli(['plan', EXAMPLE, '--state', state]);
    expect(noEnv.code).toBe(1);
    expect(noEnv.stderr).toMatch(/edgeplane\.yaml:\d+:\d+: this stack has environments \(staging, production\): choose one with --env NAME/);
    const unknown = await runCli(['validate', EXAMPLE, '--env', 'stagin']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no environment "stagin" .*\(did you mean "staging"\?\)/);
    for (const env of ['staging', 'production']) {
      const r = await runCli(['apply', EXAMPLE, '--env', env, '--state', state, '--auto-approve']);
      expect(r.code, r.stderr).toBe(0);
    }
    const all = await runCli(['plan', EXAMPLE, '--env', 'all', '--state', state, '--markdown', '--detailed-exitcode']);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain('### edgeplane plan for stack `shop-staging` (environment `staging`)');
    expect(all.stdout).toContain('### edgeplane plan for stack `shop-production` (environment `production`)');
    // EDGEPLANE_ENV chooses it too; the plan names it.
    const one = await runCli(['plan', EXAMPLE, '--state', state], { env: { EDGEPLANE_ENV: 'production' } });
    expect(one.stdout).toMatch(/stack shop-production \(environment production\)/);
    // Exported for production: its values written back as variables, an --as-variable making a new
    // one; the directory written plans to no changes in that environment.
    const out = join(state, 'exported');
    const ex = await runCli(['export', '--env', 'production', '--state', state, '--as-variable', 'HTTPSEdge/web.description=title', '--out', out], { cwd: EXAMPLE });
    expect(ex.code, ex.stderr).toBe(0);
    expect(ex.stderr).toContain('written as variables of environment production: app_backends (1 place), domain (1 place)');
    expect(readFileSync(join(out, 'https-edge.yaml'), 'utf8')).toMatch(/description: \{ var: title \}\nhostports:\n  - \$\{var\.domain\}:443\n/);
    expect(readFileSync(join(out, 'edgeplane.yaml'), 'utf8')).toContain('environments:\n  production:\n    stack: shop-production\n    values:\n');
    const back = await runCli(['plan', out, '--env', 'production', '--state', state, '--detailed-exitcode']);
    expect(back.code, back.stdout + back.stderr).toBe(0);
    // Into a directory whose edgeplane.yaml declares the variable already: its default is the value
    // (another one is refused, not declared a second time and planned as a change of hostports).
    const declared = join(state, 'declared');
    mkdirSync(declared);
    const stackFile = (d: string) => writeFileSync(join(declared, 'edgeplane.yaml'), `stack: shop-production\nvariables:\n  domain: {type: string, default: ${d}}\n`);
    stackFile('elsewhere.example.com');
    const other = await runCli(['export', '--state', state, '--as-variable', 'hostports=domain=shop.example.com', '--out', declared]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('domain is "elsewhere.example.com" in this environment, not "shop.example.com"');
    expect(existsSync(join(declared, 'https-edge.yaml'))).toBe(false);
    stackFile('shop.example.com');
    const same = await runCli(['export', '--state', state, '--as-variable', 'hostports=domain', '--out', declared]);
    expect(same.code, same.stderr).toBe(0);
    expect(same.stderr).not.toContain('add to');
    expect(readFileSync(join(declared, 'https-edge.yaml'), 'utf8')).toContain('hostports:\n  - ${var.domain}:443\n');
    const declaredBack = await runCli(['plan', declared, '--state', state, '--detailed-exitcode']);
    expect(declaredBack.code, declaredBack.stdout + declaredBack.stderr).toBe(0);
    const d = await runCli(['diff-env', 'staging', 'production', EXAMPLE, '--json']);
    expect(d.code, d.stderr).toBe(0);
    const diff = JSON.parse(d.stdout) as { changed: { identity: string; field: string }[]; onlyIn: unknown[] };
    expect(diff.onlyIn).toEqual([]);
    expect(diff.changed.map((c) => `${c.identity} ${c.field}`).sort()).toEqual(['FailoverBackend/app backends', 'HTTPSEdge/web hostports', 'HTTPSEdge/web/routes/admin ip_restriction']);
  });
});
