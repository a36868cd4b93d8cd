import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { resolveStack } from '../../src/reconciler/manifests/config.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';
import { environmentNames, selectEnvironment } from '../../src/reconciler/manifests/environments.js';
import { runCli } from '../helpers/cli.js';
import { EXAMPLES } from '../helpers/reconcile.js';

const manifestExamples = readdirSync(EXAMPLES).filter((d) => statSync(join(EXAMPLES, d)).isDirectory() && d !== 'ci' && d !== 'policies');

describe('examples', () => {
  it.each(manifestExamples)('examples/%s validates strictly: no errors, no warnings, no literal secrets', (name) => {
    const root = join(EXAMPLES, name);
    // A stack with environments validates in each of them (examples/environments).
    const envs = environmentNames(root);
    for (const env of envs.length ? envs : [undefined]) {
      const environment = selectEnvironment(root, env);
      const stack = environment.stack ?? resolveStack(root).stack;
      const r = validateDir({ root, stack, strict: true, environment });
      expect(r.problems.map(formatProblem)).toEqual([]);
      expect(r.objects.length).toBeGreaterThan(0);
    }
  });

  it('examples/full uses every module of every kind at least once', () => {
    const r = validateDir({ root: join(EXAMPLES, 'full'), stack: 'full-example' });
    const used = new Set<string>();
    const kinds = new Set<string>();
    for (const o of r.objects.flatMap((x) => [x, ...x.children])) {
      kinds.add(o.kind.name);
      for (const m of o.kind.modules ?? []) if (o.body[m.name]) used.add(`${o.kind.name}.${m.name}`);
    }
    const all = r.objects.flatMap((x) => [x, ...x.children]).map((o) => o.kind);
    const expected = [...new Map(all.map((k) => [k.name, k])).values()].flatMap((k) => (k.modules ?? []).map((m) => `${k.name}.${m.name}`));
    expect([...used].sort()).toEqual(expected.sort());
    expect([...kinds].sort()).toEqual(['certificateAuthority', 'failoverBackend', 'httpsEdge', 'httpsEdgeRoute']);
  });

  it('the CI workflow plans pull requests and applies on merge through the action, a read key for plans, the secrets to the action step only', () => {
    const wf = parse(readFileSync(join(EXAMPLES, 'ci', 'github-workflow.yml'), 'utf8'));
    expect(Object.keys(wf.on).sort()).toEqual(['pull_request', 'push']);
    type Step = { uses?: string; run?: string; with?: Record<string, string>; env?: Record<string, string> };
    const jobs = wf.jobs as Record<string, { if: string; permissions: Record<string, string>; env?: object; steps: Step[] }>;
    expect(Object.keys(jobs).sort()).toEqual(['apply', 'plan']);
    expect(jobs.plan.permissions).toEqual({ contents: 'read', 'pull-requests': 'write' });
    expect(jobs.apply.permissions).toEqual({ contents: 'read' });
    for (const [name, job] of Object.entries(jobs)) {
      const action = job.steps.find((st) => /\/edgeplane@/.test(st.uses ?? ''))!;
      expect(action, name).toBeDefined();
      expect(action.with).toEqual({ directory: 'edge' });
      // Plans read with a key that can only read; applies get the write key.
      expect(action.env!.EDGEPLANE_API_KEY).toBe(name === 'plan' ? '${{ secrets.EDGEPLANE_READ_API_KEY }}' : '${{ secrets.EDGEPLANE_API_KEY }}');
      // The key and the secrets reach the action step only, never the whole workflow or job.
      expect(JSON.stringify(job.env ?? {})).not.toMatch(/secrets\./);
      for (const st of job.steps) expect(JSON.stringify(st).includes('secrets.'), JSON.stringify(st)).toBe(st === action);
      // edgeplane is not on the npm registry: installing it by name would run someone else's package with the key.
      expect(job.steps.map((st) => st.run ?? '').join('\n')).not.toMatch(/npm (install|i)\b/);
    }
    expect(JSON.stringify(wf.env ?? {})).not.toMatch(/secrets\./);
    // No saved plan leaves the job (it holds secret fingerprints; artifacts of public repositories are public).
    expect(JSON.stringify(wf.jobs)).not.toContain('upload-artifact');
  });

  it("the action's steps run edgeplane with flags the CLI has", async () => {
    const bySub = new Map<string, Set<string>>();
    for (const script of ['plan.mjs', 'apply.mjs']) {
      const text = readFileSync(join(EXAMPLES, '..', 'action', script), 'utf8');
      for (const [, call] of text.matchAll(/edgeplane\(\[([^\]]*)\]/g)) {
        const words = [...call.matchAll(/'([^']+)'/g)].map((m) => m[1]);
        bySub.set(words[0], new Set([...(bySub.get(words[0]) ?? []), ...words.filter((w) => w.startsWith('--'))]));
      }
      for (const [, flag] of text.matchAll(/\['(--[a-z-]+)'/g)) bySub.set('plan', new Set([...(bySub.get('plan') ?? []), flag]));
    }
    expect([...bySub.keys()].sort()).toEqual(['apply', 'plan', 'validate']);
    expect([...bySub.get('plan')!]).toEqual(expect.arrayContaining(['--markdown', '--detailed-exitcode', '--out-markdown', '--strict', '--stack']));
    for (const [sub, flags] of bySub) {
      const help = await runCli([sub, '--help']);
      expect(help.code, help.stderr).toBe(0);
      for (const f of flags) expect(help.stdout, `edgeplane ${sub} ${f}`).toContain(f);
    }
  }, 120_000);

  it('the drift workflow runs on a schedule and checks drift through the action, the secrets to the action step only', () => {
    const wf = parse(readFileSync(join(EXAMPLES, 'ci', 'drift-workflow.yml'), 'utf8'));
    const steps = wf.jobs.drift.steps as { uses?: string; run?: string; with?: Record<string, string> }[];
    expect(wf.on.schedule[0].cron).toMatch(/^\S+ \S+ \S+ \S+ \S+$/);
    expect(wf.jobs.drift.permissions).toEqual({ contents: 'read', issues: 'write' });
    const action = steps.find((st) => /\/edgeplane@/.test(st.uses ?? ''))!;
    expect(action.with).toEqual({ directory: 'edge', command: 'drift' });
    for (const step of steps) expect(JSON.stringify(step).includes('secrets.'), JSON.stringify(step)).toBe(step === action);
    expect(JSON.stringify(action)).toContain('secrets.EDGEPLANE_READ_API_KEY');
    expect(runs(steps)).not.toMatch(/npm (install|i)\b/);
  });
});

function runs(steps: { run?: string }[]): string {
  return steps.map((s) => s.run ?? '').join('\n');
}
