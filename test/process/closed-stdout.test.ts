import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI, ROOT, cliEnv } from '../helpers/cli.js';

/** Runs `edgeplane ARGS` with its output read by nobody: the reader has gone (`| head -1` after its line). */
function runUnread(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, ...args], { cwd: ROOT, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the pipe's reading end is closed: every write gets EPIPE
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('output to a pipe nobody reads any more (edgeplane … | head)', { timeout: 60_000 }, () => {
  it('is dropped quietly: no stack trace, and the command ends as it would have', async () => {
    for (const args of [['graph', 'examples/small'], ['help', 'admin']]) {
      const r = await runUnread(args);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
    }
  });
});
