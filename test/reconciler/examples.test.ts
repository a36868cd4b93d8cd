import { createRequire } from 'node:module';
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

const manifestExamples = readdirSync(EXAMPLES).filter((d) => statSync(join(EXAMPLES, d)).isDirectory() && d !== 'ci');

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

  it('the CI workflow plans pull requests into a comment and applies on merge, with flags the CLI has', async () => {
    const wf = parse(readFileSync(join(EXAMPLES, 'ci', 'github-workflow.yml'), 'utf8'));
    expect(Object.keys(wf.on).sort()).toEqual(['pull_request', 'push']);
    const runs: string[] = Object.values(wf.jobs as Record<string, { steps: { run?: string }[] }>)
      .flatMap((j) => j.steps.map((s) => s.run ?? '')).join('\n').split('\n');
    const commands = runs.map((l) => l.trim()).filter((l) => l.startsWith('edgeplane '));
    expect(commands.some((c) => /^edgeplane plan .*--markdown/.test(c))).toBe(true);
    expect(commands.some((c) => /^edgeplane apply .*--auto-approve/.test(c))).toBe(true);
    expect(JSON.stringify(wf.jobs.plan.steps)).toContain('createComment');
    // edgeplane is not on the npm registry: installing it by name would run someone else's package with the key.
    expect(runs.join('\n')).not.toMatch(/npm (install|i)\b[^\n]*(?<![./\w-])edgeplane(@|\s|$)/m);
    // Invalid manifests reach the comment (plan --markdown lists them): no step fails the job before it.
    expect(commands.filter((c) => c.startsWith('edgeplane validate'))).toEqual([]);
    expect(commands.find((c) => c.startsWith('edgeplane plan'))).toContain('--strict');
    // The key and the secrets reach the edgeplane steps only, never the whole workflow or job.
    expect(JSON.stringify(wf.env ?? {})).not.toMatch(/secrets\./);
    for (const job of Object.values(wf.jobs as Record<string, { env?: object; steps: { run?: string; env?: Record<string, string> }[] }>)) {
      expect(JSON.stringify(job.env ?? {})).not.toMatch(/secrets\./);
      for (const step of job.steps) {
        const usesSecrets = JSON.stringify(step).includes('secrets.');
        expect(usesSecrets, JSON.stringify(step)).toBe(/^edgeplane (plan|apply) /m.test((step.run ?? '').trim().split('\n').map((l) => l.trim()).join('\n')));
      }
    }
    // No saved plan leaves the job (it holds secret fingerprints; artifacts of public repositories are public).
    expect(JSON.stringify(wf.jobs)).not.toContain('upload-artifact');
    const bySub = new Map<string, Set<string>>();
    for (const c of commands) {
      const [, sub, ...rest] = c.split(/\s+/);
      const flags = rest.filter((x) => x.startsWith('--'));
      bySub.set(sub, new Set([...(bySub.get(sub) ?? []), ...flags]));
    }
    for (const [sub, flags] of bySub) {
      const help = await runCli([sub, '--help']);
      expect(help.code, help.stderr).toBe(0);
      for (const f of flags) expect(help.stdout, `edgeplane ${sub} ${f}`).toContain(f);
    }
  }, 120_000);

  it("the CI workflow's comment step updates only its own comment (anyone can post one starting with the marker) and names the commit planned", async () => {
    const wf = parse(readFileSync(join(EXAMPLES, 'ci', 'github-workflow.yml'), 'utf8'));
    const step = (wf.jobs.plan.steps as { uses?: string; with?: { script?: string } }[]).find((s) => s.uses?.startsWith('actions/github-script'))!;
    // The script reads plan.md through require('fs'): given one that has it.
    const fakeRequire = (m: string) => (m === 'fs' ? { readFileSync: (f: string) => { expect(f).toBe('plan.md'); return '### edgeplane plan\n'; } } : createRequire(import.meta.url)(m));
    const run = async (existing: { id: number; user: { login: string }; body: string }[]) => {
      const calls: string[] = [];
      const github = {
        paginate: async () => existing,
        rest: { issues: {
          listComments: {},
          updateComment: async (a: { comment_id: number; body: string }) => { calls.push(`update ${a.comment_id}: ${a.body}`); },
          createComment: async (a: { body: string }) => { calls.push(`create: ${a.body}`); },
        } },
      };
      const context = { repo: { owner: 'o', repo: 'r' }, issue: { number: 7 }, payload: { pull_request: { head: { sha: 'abc1234' } } } };
      const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
      await new AsyncFunction('github', 'context', 'require', step.with!.script!)(github, context, fakeRequire);
      return calls;
    };
    const forged = { id: 1, user: { login: 'mallory' }, body: '<!-- edgeplane-plan -->\n**No changes.**' };
    const calls = await run([forged]);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatch(/^create: <!-- edgeplane-plan -->\n### edgeplane plan/);
    expect(calls[0]).toContain('Planned at abc1234');
    expect(await run([forged, { id: 2, user: { login: 'github-actions[bot]' }, body: '<!-- edgeplane-plan -->\nold' }])).toEqual([expect.stringMatching(/^update 2: /)]);
  });

  describe('the drift workflow', () => {
    const wf = parse(readFileSync(join(EXAMPLES, 'ci', 'drift-workflow.yml'), 'utf8'));
    const steps = wf.jobs.drift.steps as { id?: string; run?: string; uses?: string; env?: Record<string, string>; with?: { script?: string } }[];

    it('runs on a schedule, plans with --detailed-exitcode and flags the CLI has, and gives the secrets to the plan step only', async () => {
      expect(wf.on.schedule[0].cron).toMatch(/^\S+ \S+ \S+ \S+ \S+$/);
      expect(wf.jobs.drift.permissions).toEqual({ contents: 'read', issues: 'write' });
      const plan = steps.find((s) => s.id === 'plan')!;
      const command = plan.run!.split('\n').map((l) => l.trim()).find((l) => l.startsWith('edgeplane plan'))!;
      expect(command).toMatch(/--markdown/);
      expect(command).toMatch(/--detailed-exitcode/);
      for (const step of steps) expect(JSON.stringify(step).includes('secrets.'), JSON.stringify(step)).toBe(step === plan);
      expect(runs(steps)).not.toMatch(/npm (install|i)\b[^\n]*(?<![./\w-])edgeplane(@|\s|$)/m);
      const help = await runCli(['plan', '--help']);
      for (const flag of command.split(/\s+/).filter((x) => x.startsWith('--'))) expect(help.stdout, flag).toContain(flag);
    }, 60_000);

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
      expect(step.env?.DRIFTED).toContain('steps.plan.outputs.drifted');
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
