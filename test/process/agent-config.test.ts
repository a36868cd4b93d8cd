import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli, startServe, type Served } from '../helpers/cli.js';
import { cleanupDirs, tempDir } from '../helpers/reconcile.js';

const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 'Ann', GIT_AUTHOR_EMAIL: 'ann@example.com', GIT_COMMITTER_NAME: 'Ann', GIT_COMMITTER_EMAIL: 'ann@example.com' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: GIT_ENV, stdio: 'pipe' }).trim();
const backend = (name: string) => `kind: FailoverBackend\nname: ${name}\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n`;

/** agent.yaml: several sources (two refs of one repository), a folder of stacks, mode plan, suspend; its strict reading. */
describe('the sync agent from agent.yaml', { timeout: 240_000 }, () => {
  let served: Served;
  let env: Record<string, string>;
  beforeAll(async () => {
    const state = tempDir('ep-agent-conf-state-');
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'conf', '--json', '--state', state]);
    expect(created.code, created.stderr).toBe(0);
    served = await startServe(['--state', state]);
    env = { EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: JSON.parse(created.stdout).api_key };
  }, 120_000);
  afterAll(async () => {
    await served?.stop();
    cleanupDirs();
  });

  it('syncs a folder of stacks, only reports a stack in plan mode, leaves a suspended one alone, and reads a second ref', async () => {
    const root = tempDir('ep-agent-conf-git-');
    const work = join(root, 'work');
    mkdirSync(work);
    git(work, 'init', '-q', '-b', 'main');
    const stack = (dir: string, name: string, objects: string[]) => {
      mkdirSync(join(work, dir), { recursive: true });
      writeFileSync(join(work, dir, 'edgeplane.yaml'), `stack: ${name}\n`);
      writeFileSync(join(work, dir, 'all.yaml'), objects.map(backend).join('---\n'));
    };
    stack('stacks/a', 'team-a', ['a1', 'a2']);
    stack('stacks/b', 'team-b', ['b1']);
    stack('planned', 'planned', ['p1', 'p2', 'p3']);
    stack('paused', 'paused', ['x1']);
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', 'stacks');
    const main = git(work, 'rev-parse', 'HEAD');
    git(work, 'checkout', '-q', '-b', 'release');
    stack('rel', 'rel', ['r1']);
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', 'release');
    const release = git(work, 'rev-parse', 'HEAD');
    const config = join(root, 'agent.yaml');
    writeFileSync(config, [
      'sources:',
      '  - {name: main, url: work, ref: main, interval: 1s}',
      '  - {name: release, url: work, ref: release, interval: 1s}',
      'stacks:',
      '  - {source: main, path: stacks}',
      '  - {source: main, path: planned, mode: plan}',
      '  - {source: main, path: paused, suspend: true}',
      '  - {source: release, path: rel, interval: 1m}',
      'port: 0',
    ].join('\n') + '\n');

    const agent = startCli(['agent', '--config', config], { env });
    try {
      await agent.waitFor(/edgeplane agent on http:\/\/127\.0\.0\.1:\d+ .*syncing 4 stack entries of 2 sources/);
      const status = async () => JSON.parse((await runCli(['status', '--json'], { env })).stdout) as any[];
      let stacks: any[] = [];
      for (let i = 0; i < 200 && stacks.filter((s) => s.last_run).length < 4; i++) {
        await new Promise((r) => setTimeout(r, 100));
        stacks = await status();
      }
      const by = Object.fromEntries(stacks.map((s) => [s.stack, s]));
      expect(Object.keys(by).sort()).toEqual(['planned', 'rel', 'team-a', 'team-b']);
      expect(by['team-a']).toMatchObject({ status: 'synced', live_commit: { sha: main } });
      expect(by['team-b']).toMatchObject({ status: 'synced', live_commit: { sha: main } });
      expect(by.rel).toMatchObject({ status: 'synced', live_commit: { sha: release } });
      expect(by.planned).toMatchObject({ status: 'out_of_sync', drift_count: 3, live_commit: null, last_run: { outcome: 'drifted' } });
      const planned = JSON.parse((await runCli(['history', 'planned', '--json'], { env })).stdout);
      expect(planned[0]).toMatchObject({ outcome: 'drifted', counts: { create: 3 } });
      const table = await runCli(['status'], { env });
      expect(table.stdout).toMatch(/^planned\s+out_of_sync\s+-\s+drifted \(commit\)/m);

      // The stack's own safety settings hold: a protected object that left the manifests is kept.
      git(work, 'checkout', '-q', 'main');
      writeFileSync(join(work, 'stacks/b/edgeplane.yaml'), 'stack: team-b\nsafety:\n  protect: [FailoverBackend/b1]\n');
      writeFileSync(join(work, 'stacks/b/all.yaml'), backend('b2'));
      git(work, 'add', '-A');
      git(work, 'commit', '-q', '-m', 'b1 gone');
      const gone = git(work, 'rev-parse', 'HEAD');
      let kept: any;
      for (let i = 0; i < 200 && !kept; i++) {
        await new Promise((r) => setTimeout(r, 100));
        kept = JSON.parse((await runCli(['history', 'team-b', '--json'], { env })).stdout).find((r: any) => r.commit?.sha === gone);
      }
      expect(kept).toMatchObject({ outcome: 'applied', counts: { create: 1, delete: 0 } });
    } finally {
      agent.child.kill('SIGTERM');
      expect(await agent.exited).toBe(0);
    }
    expect(agent.out()).not.toMatch(/\bWarning\b/);
  });

  it('refuses a configuration with a typo, at its place, with the key meant', async () => {
    const root = tempDir('ep-agent-conf-bad-');
    const config = join(root, 'agent.yaml');
    writeFileSync(config, 'sources:\n  - name: main\n    url: .\n    reff: main\nstacks:\n  - source: main\n');
    const res = await runCli(['agent', '--config', config], { env });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('agent.yaml:4:5: reff is not a setting of agent.yaml sources (did you mean "ref"?)');
    const both = await runCli(['agent', '--config', config, '--repo', '.'], { env });
    expect(both.stderr).toContain('give either --config FILE or the flags of one source (--repo), not both');
    const none = await runCli(['agent'], { env });
    expect(none.stderr).toContain('agent needs --repo URL|PATH');
  });
});
