import { createRequire } from 'node:module';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { resolveStack } from '../../src/reconciler/manifests/config.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';
import { runCli } from '../helpers/cli.js';
import { EXAMPLES } from '../helpers/reconcile.js';

const manifestExamples = readdirSync(EXAMPLES).filter((d) => statSync(join(EXAMPLES, d)).isDirectory() && d !== 'ci');

describe('examples', () => {
  it.each(manifestExamples)('examples/%s validates strictly: no errors, no warnings, no literal secrets', (name) => {
    const root = join(EXAMPLES, name);
    const { stack } = resolveStack(root);
    const r = validateDir({ root, stack, strict: true });
    expect(r.problems.map(formatProblem)).toEqual([]);
    expect(r.objects.length).toBeGreaterThan(0);
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

  describe('the drift workflow', () => {
    const wf = parse(readFileSync(join(EXAMPLES, 'ci', 'drift-workflow.yml'), 'utf8'));
    const steps = wf.jobs.drift.steps as { id?: string; run?: string; uses?: string; env?: Record<string, string>; with?: { script?: string } }[];

    it('runs on a schedule, plans through the action (no comment), and gives the secrets to the plan step only', () => {
      expect(wf.on.schedule[0].cron).toMatch(/^\S+ \S+ \S+ \S+ \S+$/);
      expect(wf.jobs.drift.permissions).toEqual({ contents: 'read', issues: 'write' });
      const plan = steps.find((s) => s.id === 'plan')!;
      expect(plan.uses).toMatch(/\/edgeplane@/);
      expect((plan as { with?: Record<string, string> }).with).toEqual({ directory: 'edge', command: 'plan' });
      for (const step of steps) expect(JSON.stringify(step).includes('secrets.'), JSON.stringify(step)).toBe(step === plan);
      expect(runs(steps)).not.toMatch(/npm (install|i)\b/);
    });

    /** Runs the issue step's script against a fake GitHub holding `issues`; the calls it makes. */
    async function issueStep(drifted: boolean, issues: { number: number; user: { login: string }; body: string; pull_request?: object }[]) {
      const step = steps.find((s) => s.uses?.startsWith('actions/github-script'))!;
      const calls: string[] = [];
      const github = {
        paginate: async (_fn: unknown, args: { state: string }) => { expect(args.state).toBe('open'); return issues; },
        rest: { issues: {
          listForRepo: {},
          create: async (a: { title: string; body: string }) => { calls.push(`create "${a.title}": ${a.body}`); },
          update: async (a: { issue_number: number; body?: string; state?: string }) => { calls.push(`update ${a.issue_number}: ${a.state ?? a.body}`); },
          createComment: async (a: { issue_number: number; body: string }) => { calls.push(`comment ${a.issue_number}: ${a.body}`); },
        } },
      };
      const context = { repo: { owner: 'o', repo: 'r' }, sha: 'abc1234def', runId: 9, serverUrl: 'https://github.com' };
      const fakeRequire = (m: string) => (m === 'fs' ? { readFileSync: () => '### edgeplane plan\n~ update HTTPSEdge/web\n' } : createRequire(import.meta.url)(m));
      const before = process.env.DRIFTED;
      process.env.DRIFTED = String(drifted);
      try {
        const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
        await new AsyncFunction('github', 'context', 'require', step.with!.script!)(github, context, fakeRequire);
      } finally {
        if (before === undefined) delete process.env.DRIFTED; else process.env.DRIFTED = before;
      }
      expect(step.env?.DRIFTED).toContain('steps.plan.outputs.changes');
      expect(step.env?.PLAN_FILE).toContain('steps.plan.outputs.markdown-file');
      return calls;
    }

    const own = { number: 4, user: { login: 'github-actions[bot]' }, body: '<!-- edgeplane-drift -->\nold plan' };
    const forged = { number: 3, user: { login: 'mallory' }, body: '<!-- edgeplane-drift -->\nnot ours' };

    it('opens one issue with the Markdown plan when the live state drifted, and updates it on later runs', async () => {
      const opened = await issueStep(true, [forged]);
      expect(opened).toHaveLength(1);
      expect(opened[0]).toMatch(/^create "edgeplane: live state drifted from main": <!-- edgeplane-drift -->\n/);
      expect(opened[0]).toContain('### edgeplane plan\n~ update HTTPSEdge/web');
      expect(opened[0]).toContain('abc1234');
      expect(await issueStep(true, [forged, own])).toEqual([expect.stringMatching(/^update 4: <!-- edgeplane-drift -->[\s\S]*~ update HTTPSEdge\/web/)]);
    });

    it('closes its issue when the drift is gone, and does nothing when there is none to close', async () => {
      expect(await issueStep(false, [forged, own])).toEqual([expect.stringMatching(/^comment 4: No drift any more/), 'update 4: closed']);
      expect(await issueStep(false, [forged])).toEqual([]);
    });
  });
});

function runs(steps: { run?: string }[]): string {
  return steps.map((s) => s.run ?? '').join('\n');
}
