import { createRequire } from 'node:module';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { resolveStack } from '../../src/reconciler/manifests/config.js';
import { validateDir } from '../../src/reconciler/pipeline.js';
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
});
