import { execFile } from 'node:child_process';
import type { Commit } from '../client/sync-record.js';

/** Runs `git` with `args`; its stdout. Never through a shell; the environment given (credentials) is git's alone. */
export function git(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd: opts.cwd, env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 60_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(new Error(`git ${args[0]}: ${String(stderr || err.message).trim().split('\n').slice(-3).join(' ')}`), { stderr }));
      else resolve(stdout);
    });
  });
}

const FORMAT = '%H%x00%s%x00%an <%ae>';

/** The commit `rev` (default HEAD) of the repository at `dir`: sha, subject, author. */
export async function commitOf(dir: string, rev = 'HEAD', env?: NodeJS.ProcessEnv): Promise<Commit> {
  const [sha, subject, author] = (await git(['log', '-1', `--format=${FORMAT}`, rev, '--'], { cwd: dir, env })).replace(/\n$/, '').split('\0');
  return { sha, subject: subject.slice(0, 1000), author: author.slice(0, 500) };
}

/**
 * The commit the manifests of `dir` are, for the record of a CLI apply: HEAD when `dir` is in a
 * Git work tree and nothing under it differs from HEAD; null otherwise (not a repository, no
 * commit yet, changes not committed, no `git`).
 */
export async function cleanHeadCommit(dir: string): Promise<Commit | null> {
  try {
    const dirty = await git(['status', '--porcelain', '--untracked-files=normal', '--', '.'], { cwd: dir, timeoutMs: 10_000 });
    if (dirty.trim() !== '') return null;
    return await commitOf(dir);
  } catch {
    return null;
  }
}
