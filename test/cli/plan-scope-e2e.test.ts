import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, cliEnv, ROOT, runCli, type CliResult } from '../helpers/cli.js';
import { cleanupDirs, manifestDir, tempDir } from '../helpers/reconcile.js';

/**
 * `--target`, `destroy` and the stack file's safety settings as a user runs them: `edgeplane`
 * processes on the embedded engine (--state).
 */
afterAll(() => cleanupDirs());

interface JsonPlan { steps: { id: string; action: string }[]; summary: Record<string, number>; warnings: string[]; partial?: unknown; blocked: unknown[] }
const planJson = async (dir: string, state: string, extra: string[] = []): Promise<JsonPlan> => {
  const r = await runCli(['plan', dir, '--state', state, '--json', ...extra]);
  expect([0, 3], r.stderr).toContain(r.code);
  return JSON.parse(r.stdout) as JsonPlan;
};

/** `edgeplane ARGS` on a terminal (util-linux `script` gives it one), typing `input`. */
function onTerminal(args: string[], input: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const command = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: ROOT, env: cliEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr: '' }));
    child.stdin.end(input);
  });
}

const stack = (name: string, extra = '') => `stack: ${name}\n${extra}`;
const web = `kind: HTTPSEdge
name: web
hostports: ["destroy-e2e.example.com:443"]
routes:
  - { name: api, match_type: path_prefix, match: /api, backend: { backend_id: pool } }
`;
const fo = (name: string, extra = '') => `kind: FailoverBackend\nname: ${name}\n${extra}backends: []\n`;

describe('destroy on the embedded engine', { timeout: 180_000 }, () => {
  it.skipIf(!existsSync('/usr/bin/script'))('deletes only what the stack owns, after "yes" on a terminal; its plan is then all creates', async () => {
    const state = tempDir('ep-state-');
    const mine = manifestDir({ 'edgeplane.yaml': stack('mine'), 'web.yaml': web, 'pool.yaml': fo('pool') + '---\n' + fo('keep', 'protect: true\n') });
    const theirs = manifestDir({ 'edgeplane.yaml': stack('theirs'), 'pool.yaml': fo('theirs') });
    for (const dir of [mine, theirs]) {
      const r = await runCli(['apply', dir, '--state', state, '--auto-approve']);
      expect(r.code, r.stderr).toBe(0);
    }

    // No terminal and no --auto-approve: refused before any step.
    const unasked = await runCli(['destroy', mine, '--state', state]);
    expect(unasked.code).toBe(1);
    expect(unasked.stderr).toContain('destroy: no terminal to ask for confirmation; pass --auto-approve (CI)');

    const asked = await onTerminal(['destroy', mine, '--state', state], 'yes\n');
    expect(asked.code, asked.stdout).toBe(0);
    expect(asked.stdout).toContain('Destroy stack "mine" on embedded:');
    expect(asked.stdout).toContain('delete 2 objects?');
    // The edge (its route with it) before the backend its route used; the protected one stays.
    expect(asked.stdout.indexOf('- delete HTTPSEdge/web')).toBeLessThan(asked.stdout.indexOf('- delete FailoverBackend/pool'));
    expect(asked.stdout).toContain('FailoverBackend/keep');
    expect(asked.stdout).toContain('is protected: kept');

    const after = await planJson(mine, state);
    expect(after.steps.map((s) => s.action).every((a) => a === 'create')).toBe(true);
    expect(after.summary).toEqual({ create: 3, update: 0, replace: 0, delete: 0 });
    // Another stack's object in the same account is untouched.
    expect((await runCli(['plan', theirs, '--state', state, '--detailed-exitcode'])).code).toBe(0);
  });
});

describe('--target and the stack file\'s safety settings on the embedded engine', { timeout: 180_000 }, () => {
  it('applies only the targeted object, refuses an unknown selector with the nearest names, and blocks by the file\'s threshold', async () => {
    const state = tempDir('ep-state-');
    const settings = stack('tgt', 'safety:\n  threshold: { percent: 50, min_owned: 2 }\n  protect: ["FailoverBackend/keep"]\n');
    const dir = manifestDir({ 'edgeplane.yaml': settings, 'pool.yaml': [fo('a'), fo('b'), fo('keep')].join('---\n') });
    expect((await runCli(['apply', dir, '--state', state, '--auto-approve'])).code).toBe(0);

    writeFileSync(join(dir, 'pool.yaml'), [fo('a', 'description: a v2\n'), fo('b', 'description: b v2\n'), fo('keep')].join('---\n'));
    const targeted = await runCli(['apply', dir, '--state', state, '--auto-approve', '--target', 'FailoverBackend/a']);
    expect(targeted.code, targeted.stderr).toBe(0);
    expect(targeted.stdout).toContain('PARTIAL PLAN: only what --target FailoverBackend/a selects; 1 step of the stack outside the targets is not planned');
    expect((await planJson(dir, state)).steps.map((s) => s.id)).toEqual(['FailoverBackend/b:update']);

    const unknown = await runCli(['plan', dir, '--state', state, '--target', 'FailoverBackend/c', '--target', 'FailoverBackend/*']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('--target FailoverBackend/c names no object of this stack (nearest: FailoverBackend/a, FailoverBackend/b, FailoverBackend/keep)');

    // Two of three owned backends pruned: over the file's 50 % (the defaults would not apply below 10).
    // `keep` leaves the manifests too, but it is protected: kept, not counted.
    writeFileSync(join(dir, 'pool.yaml'), fo('other'));
    const blocked = await planJson(dir, state);
    expect(blocked.blocked).toEqual([{ kind: 'failoverBackend', owned: 3, changed: 2, deletes: 2, updates: 0 }]);
    expect(blocked.warnings.filter((w) => /^FailoverBackend\/keep \(bkdfo_\w+\) is no longer in the manifests but is protected: kept$/.test(w))).toHaveLength(1);
    const refused = await runCli(['apply', dir, '--state', state, '--auto-approve']);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('apply blocked by the safety threshold (2 of 3 owned failover backends would change)');
  });
});
