import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startCli, type Running } from '../helpers/cli.js';
import { cleanupDirs, manifestDir, tempDir } from '../helpers/reconcile.js';

afterAll(() => cleanupDirs());

const backend = (name: string) => `kind: FailoverBackend\nname: ${name}\nbackends: []\n`;

describe('two watches on one state directory', { timeout: 240_000 }, () => {
  it('the second, which went through the first, opens the directory itself when the first stops, applies its saves, and serves the directory in turn', async () => {
    const state = tempDir('ep-state-');
    const at = ['--state', state];
    const one = manifestDir({ 'edgeplane.yaml': 'stack: one\n', 'one.yaml': backend('from-one') });
    const two = manifestDir({ 'edgeplane.yaml': 'stack: two\n', 'two.yaml': backend('from-two') });
    const running: Running[] = [];
    try {
      const first = startCli(['watch', one, ...at]);
      running.push(first);
      await first.waitFor(/\[run-1\] ok in/, { timeoutMs: 90_000 });
      const second = startCli(['watch', two, ...at]);
      running.push(second);
      const [, url] = await second.waitFor(/\(stack two on (http:\/\/127\.0\.0\.1:\d+)\)/, { timeoutMs: 90_000 });
      await second.waitFor(/\[run-1\] ok in/);

      first.child.kill('SIGINT'); // Ctrl-C: its port is closed and the directory released
      expect(await first.exited).toBe(0);
      expect(existsSync(join(state, 'lock'))).toBe(false);

      const mark = second.out().length;
      writeFileSync(join(two, 'more.yaml'), backend('from-two-later'));
      await second.waitFor(new RegExp(`${url} stopped serving the state directory: now on embedded:${state}\\n`), { from: mark, timeoutMs: 30_000 });
      await second.waitFor(/done\s+create FailoverBackend\/from-two-later/, { from: mark, timeoutMs: 30_000 });
      await second.waitFor(/\[run-\d+\] ok in/, { from: mark });
      expect(second.out().slice(mark)).not.toMatch(/ECONNREFUSED|failed:|retrying/);

      // It holds the directory now, and serves it to the next command as the first did.
      const plan = await runCli(['plan', two, ...at, '--detailed-exitcode']);
      expect(plan.code, plan.stdout + plan.stderr).toBe(0);
      expect(plan.stdout).toMatch(/ on http:\/\/127\.0\.0\.1:\d+\n/);
      expect(plan.stdout).not.toContain(` on ${url}\n`);
      // The first stack's object was not touched.
      const planOne = await runCli(['plan', one, ...at, '--detailed-exitcode']);
      expect(planOne.code, planOne.stdout + planOne.stderr).toBe(0);

      second.child.kill('SIGINT');
      expect(await second.exited).toBe(0);
      expect(existsSync(join(state, 'lock'))).toBe(false);
    } finally {
      for (const r of running) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
    }
  });
});
