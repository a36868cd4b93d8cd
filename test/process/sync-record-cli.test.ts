import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { cleanupDirs, manifestDir, tempDir } from '../helpers/reconcile.js';

const backend = (name: string) => `kind: FailoverBackend\nname: ${name}\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n`;
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 'Ann', GIT_AUTHOR_EMAIL: 'ann@example.com', GIT_COMMITTER_NAME: 'Ann', GIT_COMMITTER_EMAIL: 'ann@example.com' } });

/** apply and destroy write runs to the sync record; status, history and sync read and ask it (embedded service). */
describe('the sync record from the command line', { timeout: 240_000 }, () => {
  afterAll(() => cleanupDirs());

  it('apply records its runs with the commit of a clean work tree; status and history show them; sync asks for one', async () => {
    const state = tempDir('ep-record-state-');
    const env = { EDGEPLANE_STATE: state };
    const dir = manifestDir({ 'all.yaml': backend('pool'), 'edgeplane.yaml': 'stack: web\n' });
    git(dir, 'init', '-q', '-b', 'main');
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', 'first pool');
    const sha = git(dir, 'rev-parse', 'HEAD').trim();

    const applied = await runCli(['apply', dir, '--auto-approve'], { env });
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).toBe('');
    const again = await runCli(['apply', dir, '--auto-approve'], { env });
    expect(again.code, again.stderr).toBe(0);

    const status = await runCli(['status', 'web', '--json'], { env });
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ stack: 'web', status: 'synced', drift_count: 0, live_commit: { sha, subject: 'first pool', author: 'Ann <ann@example.com>' }, last_run: { outcome: 'no_changes', trigger: 'cli' }, lock: null });

    // Uncommitted changes: the run names no commit, and the live commit is no longer known.
    writeFileSync(join(dir, 'all.yaml'), backend('pool') + '---\n' + backend('spare'));
    expect((await runCli(['apply', dir, '--auto-approve'], { env })).code).toBe(0);
    const history = await runCli(['history', 'web', '--json'], { env });
    const runs = JSON.parse(history.stdout);
    expect(runs.map((r: any) => [r.outcome, r.trigger, r.commit?.sha ?? null])).toEqual([['applied', 'cli', null], ['no_changes', 'cli', sha], ['applied', 'cli', sha]]);
    expect(runs[2].counts).toEqual({ create: 1, update: 0, replace: 0, delete: 0 });
    expect(runs[2].holder).toMatch(/pid \d+, apply/);

    // apply --plan records its run too, with no commit (a saved plan names none).
    writeFileSync(join(dir, 'all.yaml'), backend('pool') + '---\n' + backend('spare') + '---\n' + backend('third'));
    const planFile = join(state, 'plan.json');
    expect((await runCli(['plan', dir, '--out', planFile], { env })).code).toBe(0);
    const savedApply = await runCli(['apply', '--plan', planFile], { env });
    expect(savedApply.code, savedApply.stderr).toBe(0);
    expect(JSON.parse((await runCli(['history', 'web', '--json', '--limit', '1'], { env })).stdout)[0]).toMatchObject({ outcome: 'applied', commit: null, counts: { create: 1 }, holder: expect.stringMatching(/, apply --plan(, [^,]+)?$/) }); // CI runs add where they run

    // A manifest that does not validate is recorded as failed, with why.
    writeFileSync(join(dir, 'bad.yaml'), 'kind: FailoverBackend\nname: bad\nbackendz: []\n');
    expect((await runCli(['apply', dir, '--auto-approve'], { env })).code).toBe(1);
    const failed = JSON.parse((await runCli(['history', 'web', '--json', '--limit', '1'], { env })).stdout);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ outcome: 'failed' });
    expect(failed[0].error).toContain('the manifests do not validate');

    const table = await runCli(['status'], { env });
    expect(table.stdout).toMatch(/^STACK\s+STATUS\s+LIVE COMMIT\s+LAST RUN\s+DRIFT\s+LOCK\nweb\s+failed\s+-\s+failed \(cli\)/);
    const hist = await runCli(['history', 'web'], { env });
    expect(hist.stdout.split('\n')[0]).toMatch(/^FINISHED\s+OUTCOME\s+TRIGGER\s+COMMIT\s+CHANGES\s+POLICIES\s+BY\s+ERROR$/);
    expect(hist.stdout).toContain(`${sha.slice(0, 10)} first pool`);

    const asked = await runCli(['sync', 'web'], { env });
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stdout).toContain('asked for a sync of stack "web"');
    expect(JSON.parse((await runCli(['status', 'web', '--json'], { env })).stdout).sync_requested_at).toMatch(/Z$/);

    const destroyed = await runCli(['destroy', manifestDir({ 'all.yaml': backend('pool'), 'edgeplane.yaml': 'stack: web\n' }), '--auto-approve'], { env });
    expect(destroyed.code, destroyed.stderr).toBe(0);
    const last = JSON.parse((await runCli(['history', 'web', '--json', '--limit', '1'], { env })).stdout)[0];
    expect(last).toMatchObject({ outcome: 'applied', trigger: 'cli', counts: { delete: 3 } });
    expect(last.holder).toMatch(/, destroy$/);
    expect(last.plan_markdown).toBeUndefined();
    expect((await runCli(['status', 'NOPE'], { env })).code).toBe(1);
  });
});
