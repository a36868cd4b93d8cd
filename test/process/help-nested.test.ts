import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI, ROOT, cliEnv } from '../helpers/cli.js';

const edgeplane = (...args: string[]) => spawnSync(process.execPath, [...CLI, ...args], { cwd: ROOT, env: cliEnv(), encoding: 'utf8' });

describe('edgeplane help COMMAND SUBCOMMAND', { timeout: 60_000 }, () => {
  it('shows the subcommand in full, as `COMMAND SUBCOMMAND --help` does', () => {
    for (const words of [['lock', 'status'], ['admin', 'keys', 'create']]) {
      const r = edgeplane('help', ...words);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^Usage: edgeplane ${words.join(' ')} `));
      expect(r.stdout).toBe(edgeplane(...words, '--help').stdout);
    }
  });

  it('lists exit code 5, and real examples for graph, destroy and lock', () => {
    expect(edgeplane('--help').stdout).toMatch(/^  5  apply, destroy, watch, lock release/m);
    for (const [words, example] of [[['graph'], 'edgeplane graph edge --format dot'], [['destroy'], 'edgeplane destroy edge --auto-approve'], [['lock'], 'edgeplane lock release edge'], [['lock', 'release'], '--force']] as const) {
      const r = edgeplane(...words, '--help');
      expect(r.stdout, words.join(' ')).toContain(example);
    }
    expect(edgeplane('destroy', '--help').stdout).toMatch(/^  5  /m);
  });

  it('`help help` is the main help, exit 0', () => {
    const r = edgeplane('help', 'help');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(edgeplane('--help').stdout);
  });
});
