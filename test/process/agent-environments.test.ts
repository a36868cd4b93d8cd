import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport } from '../../src/client/transport.js';
import { runCli, startCli, startServe, type Served } from '../helpers/cli.js';
import { cleanupDirs, tempDir } from '../helpers/reconcile.js';

const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 'Ann', GIT_AUTHOR_EMAIL: 'ann@example.com', GIT_COMMITTER_NAME: 'Ann', GIT_COMMITTER_EMAIL: 'ann@example.com' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: GIT_ENV, stdio: 'pipe' }).trim();

/**
 * A real `edgeplane agent` on a repository whose stack folder declares staging and production
 * (examples/environments): each environment is synced as its own stack, with a history of its own.
 */
describe('the sync agent over environments (real processes)', { timeout: 120_000 }, () => {
  let served: Served;
  let env: Record<string, string>;
  beforeAll(async () => {
    const state = tempDir('ep-agent-envs-state-');
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'envs', '--json', '--state', state]);
    expect(created.code, created.stderr).toBe(0);
    served = await startServe(['--state', state]);
    env = { EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: JSON.parse(created.stdout).api_key };
  }, 60_000);
  afterAll(async () => {
    await served?.stop();
    cleanupDirs();
  });

  it('applies staging and production of one stack folder as two stacks, one run each, and both then plan to nothing', async () => {
    const work = join(tempDir('ep-agent-envs-git-'), 'work');
    mkdirSync(work);
    git(work, 'init', '-q', '-b', 'main');
    cpSync('examples/environments', join(work, 'shop'), { recursive: true });
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', 'shop in staging and production');
    const sha = git(work, 'rev-parse', 'HEAD');

    const agent = startCli(['agent', '--repo', work, '--ref', 'main', '--path', 'shop', '--interval', '1s', '--mode', 'apply', '--port', '0'], { env });
    try {
      await agent.waitFor(/edgeplane agent on http:\/\/127\.0\.0\.1:\d+ /);
      await agent.waitFor(/stack shop-staging: commit \w+ → applied/);
      await agent.waitFor(/stack shop-production: commit \w+ → applied/);
      // Read through the API (as `edgeplane status` and `history` read them).
      const client = new ApiClient(httpTransport(served.url, env.EDGEPLANE_API_KEY));
      const stacks = ((await client.send('GET', '/stacks?limit=100')) as { stacks: { stack: string }[] }).stacks;
      const by = Object.fromEntries(stacks.map((s) => [s.stack, s]));
      expect(Object.keys(by).sort()).toEqual(['shop-production', 'shop-staging']);
      for (const stack of ['shop-staging', 'shop-production']) {
        expect(by[stack]).toMatchObject({ status: 'synced', live_commit: { sha } });
        const history = ((await client.send('GET', `/sync_runs?stack=${stack}&limit=100`)) as { sync_runs: unknown[] }).sync_runs;
        // One run per environment's stack: its backend, edge and two routes created.
        expect(history, stack).toHaveLength(1);
        expect(history[0]).toMatchObject({ outcome: 'applied', commit: { sha }, counts: { create: 4, delete: 0 } });
      }
      await client.close();
      // What each stack holds is its environment's desired state: planned from the folder, nothing to do in either.
      const plan = await runCli(['plan', join(work, 'shop'), '--env', 'all', '--detailed-exitcode'], { env });
      expect(plan.code, plan.stdout + plan.stderr).toBe(0);
      for (const e of ['staging', 'production']) expect(plan.stdout).toMatch(new RegExp(`edgeplane plan: stack shop-${e} \\(environment ${e}\\) on \\S+\\n+No changes\\.`));
    } finally {
      agent.child.kill('SIGTERM');
      expect(await agent.exited).toBe(0);
    }
    expect(agent.out()).not.toMatch(/\bWarning\b/);
  });
});
