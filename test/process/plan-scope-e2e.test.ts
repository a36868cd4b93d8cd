import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, cliEnv, ROOT, runCli, type CliResult } from '../helpers/cli.js';
import { cleanupDirs, manifestDir, tempDir } from '../helpers/reconcile.js';

/**
 * `destroy` and `--target` as a user runs them: `edgeplane` processes on the embedded engine
 * (--state), a terminal for the confirmation. The flags' other cases: test/reconciler/scope-cli.test.ts.
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
    const command = [process.execPath, ...CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
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

    // --target is repeatable; one that names nothing stops the plan, naming the nearest.
    const unknown = await runCli(['plan', mine, '--state', state, '--target', 'FailoverBackend/pol', '--target', 'HTTPSEdge/*']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('--target FailoverBackend/pol names no object of this stack (nearest: FailoverBackend/pool, FailoverBackend/keep, HTTPSEdge/web)');
  });
});
