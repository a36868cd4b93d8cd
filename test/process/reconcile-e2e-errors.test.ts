import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { cleanupDirs, manifestDir, tempDir } from '../helpers/reconcile.js';

/**
 * The reconciler as a user runs it, given bad manifests and bad arguments (the rest of the
 * end-to-end runs are in reconcile-e2e.test.ts and reconcile-e2e-deployment.test.ts: split so
 * the test workers share them).
 */
afterAll(() => cleanupDirs());

describe('bad manifests on the embedded default', { timeout: 120_000 }, () => {
  it('plan and apply print every problem with its position and exit 1, and the state is still usable', async () => {
    const state = tempDir('ep-state-');
    const dir = tempDir('ep-bad-');
    writeFileSync(join(dir, 'edge.yaml'), 'kind: HTTPSEdge\nname: Bad_Name\n');
    for (const args of [['plan', dir, '--state', state], ['apply', dir, '--state', state, '--auto-approve']]) {
      const res = await runCli(args);
      expect(res.code, `${args[0]}: ${res.stdout}${res.stderr}`).toBe(1);
      expect(res.stderr).toMatch(/edge\.yaml:2:7: error: name: must be lower-case/);
    }
    const fine = await runCli(['plan', manifestDir({ 'none.yaml': '' }), '--state', state]);
    expect(fine.code, fine.stderr).toBe(0);
  });

  it('plan --json, plan --markdown and apply --json give the problems on stdout too, for machines and pull-request comments', async () => {
    const state = tempDir('ep-state-');
    const bad = manifestDir({ 'edge.yaml': 'kind: FailoverBackend\nname: x\ndescripton: typo\nbackends: []\n' });
    const json = await runCli(['plan', bad, '--state', state, '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({ valid: false, problems: [expect.objectContaining({ file: expect.stringContaining('edge.yaml'), line: 3, col: 1, rule: 'schema', path: 'descripton' })] });
    const md = await runCli(['plan', bad, '--state', state, '--markdown']);
    expect(md.code).toBe(1);
    expect(md.stdout).toContain('the manifests are not valid (1 error)');
    expect(md.stdout).toMatch(/edge\.yaml:3:1: error: descripton: is not a known field \(did you mean "description"\?\) \[schema\]/);
    const applied = await runCli(['apply', bad, '--state', state, '--json', '--auto-approve']);
    expect(applied.code).toBe(1);
    expect(JSON.parse(applied.stdout.trim().split('\n').pop()!)).toMatchObject({ event: 'problems', problems: [expect.objectContaining({ rule: 'schema' })] });
    // An API that cannot be reached: an error event, not an empty stdout.
    const good = manifestDir({ 'pool.yaml': 'kind: FailoverBackend\nname: x\nbackends: []\n' });
    const down = await runCli(['apply', good, '--json', '--auto-approve'], { env: { EDGEPLANE_API_URL: 'http://127.0.0.1:1', EDGEPLANE_API_KEY: 'ep_x' } });
    expect(down.code).toBe(1);
    expect(JSON.parse(down.stdout.trim().split('\n').pop()!)).toMatchObject({ event: 'error', error: expect.stringContaining('ECONNREFUSED') });
    // Refused before any step (no terminal to confirm on): the stream ends with why, not the plan alone.
    const unconfirmed = await runCli(['apply', good, '--state', state, '--json']);
    expect(unconfirmed.code).toBe(1);
    const events = unconfirmed.stdout.trim().split('\n').map((l) => JSON.parse(l) as { event: string });
    expect(events.map((e) => e.event)).toEqual(['plan', 'error']);
    expect(events[1]).toMatchObject({ error: expect.stringContaining('no terminal to ask for confirmation'), exit_code: 1 });
  });

  it('plan, apply and watch --prune refuse a directory with no manifest file: it would delete the whole stack', async () => {
    const state = tempDir('ep-state-');
    const dir = manifestDir({ 'pools.yaml': 'kind: FailoverBackend\nname: keep-me\nbackends: []\n', 'edgeplane.yaml': 'stack: s\n' });
    expect((await runCli(['apply', dir, '--state', state, '--auto-approve'])).code).toBe(0);
    const empty = manifestDir({ 'edgeplane.yaml': 'stack: s\n' });
    for (const args of [['validate', empty], ['plan', empty], ['apply', empty, '--auto-approve'], ['watch', empty, '--prune']]) {
      const res = await runCli([...args, ...(args[0] === 'validate' ? [] : ['--state', state])]);
      expect(res.code, `${args[0]}: ${res.stdout}${res.stderr}`).toBe(1);
      expect(res.stderr).toContain(`${empty}: no manifest files (.yaml or .yml) here`);
    }
    expect((await runCli(['plan', dir, '--state', state, '--detailed-exitcode'])).code, 'nothing was deleted').toBe(0);
    // On purpose: an empty manifest file.
    const none = manifestDir({ 'edgeplane.yaml': 'stack: s\n', 'none.yaml': '' });
    const deleting = await runCli(['plan', none, '--state', state]);
    expect(deleting.code, deleting.stderr).toBe(0);
    expect(deleting.stdout).toContain('- delete FailoverBackend/keep-me');
  });
});

describe('bad arguments fail before anything starts', { timeout: 120_000 }, () => {
  it('a manifest directory that is not there: validate, plan, apply and watch each say so and exit 1, touching no state', async () => {
    const state = tempDir('ep-state-');
    const missing = join(tempDir('ep-missing-'), 'manifets');
    for (const args of [['validate', missing], ['plan', missing, '--state', state], ['apply', missing, '--state', state, '--auto-approve'], ['watch', missing, '--state', state]]) {
      const res = await runCli(args);
      expect(res.code, `${args[0]}: ${res.stdout}${res.stderr}`).toBe(1);
      expect(res.stderr).toContain(`${missing}: no such directory or file`);
    }
    expect(existsSync(join(state, 'pgdata')), 'the embedded database was not started').toBe(false);
  });

  it('watch refuses a --debounce or --interval that is not a duration, or a --parallelism out of range, before starting', async () => {
    const state = tempDir('ep-state-');
    const dir = manifestDir({ 'a.yaml': 'kind: FailoverBackend\nname: a\nbackends: []\n' });
    for (const [flag, value, says] of [['--debounce', 'abc', 'a whole number of milliseconds'], ['--debounce', '-5', 'a whole number of milliseconds'], ['--interval', '0', 'a positive number of seconds'], ['--parallelism', 'abc', 'an integer from 1 to 64'], ['--parallelism', '0', 'an integer from 1 to 64']]) {
      const res = await runCli(['watch', dir, '--state', state, flag, value]);
      expect(res.code, `${flag} ${value}: ${res.stdout}${res.stderr}`).toBe(1);
      expect(res.stderr).toContain(`${flag} must be ${says}`);
    }
    expect(existsSync(join(state, 'pgdata'))).toBe(false);
  });
});
