import { createHash } from 'node:crypto';
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { processRuns } from '../util/process.js';

export interface LockHolder { pid: number; host: string; started_at: string; url?: string }

export class LockHeldError extends Error {
  constructor(readonly dir: string, readonly holder: LockHolder) {
    super(holder.pid < 0 ? `${dir}/lock is being written by another process, or was left damaged: if no edgeplane process uses ${dir}, it is taken over a second after it was last written; run the command again` :
      `${dir} is in use by process ${holder.pid}` +
        (holder.url ? `, serving at ${holder.url}` : '') +
        ` (since ${holder.started_at}). The embedded database cannot be opened by two processes at once: ` +
        (holder.url ? `point the CLI at it with --api-url ${holder.url}, or stop it first.` : 'stop that process first, or use another --state directory.'),
    );
    this.name = 'LockHeldError';
  }
}

/**
 * An exclusive, process-level lock on a directory: a file created with O_EXCL holding the holder's
 * pid (and URL once it serves). PGlite has no locking of its own and two processes on one data
 * directory corrupt it, so this guards every open. A lock whose process is gone is taken over, by
 * one process only however many find it at once (`removeStale`).
 */
export class DirLock {
  private released = false;
  private readonly onExit = () => this.release();

  private constructor(readonly path: string, private holder: LockHolder) {
    process.once('exit', this.onExit);
  }

  static acquire(dir: string): DirLock {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, 'lock');
    const me: LockHolder = { pid: process.pid, host: hostname(), started_at: new Date().toISOString() };
    for (let attempt = 0; attempt < 5; attempt++) {
      if (createExclusive(path, me)) return new DirLock(path, me);
      const seen = examineLock(path);
      if (!seen) continue; // released since
      const { holder } = seen;
      if (holder && (holder.host !== me.host || processRuns(holder.pid))) throw new LockHeldError(dir, holder);
      // Dead holder, or unreadable: its writer is between open and write (microseconds), or it died
      // there, or the file was damaged. Written in one call and replaced by rename, a lock is never
      // unreadable for long: one unreadable for over a second holds nobody, and is taken over.
      if (holder || seen.ageMs > STALE_MS) {
        // Removed, and made again at the top; or another process is taking it over this very
        // moment (only one may: `removeStale`): then see what it leaves.
        if (!removeStale(path, seen, me)) sleepMs(5);
        continue;
      }
      sleepMs(20);
    }
    const holder = readHolder(path);
    throw new LockHeldError(dir, holder ?? { pid: -1, host: me.host, started_at: 'unknown' });
  }

  /** Records the URL the holder serves on, so a second process can tell the user where to go. */
  setUrl(url: string) {
    this.holder = { ...this.holder, url };
    // Replaced by rename, never truncated and rewritten: another process never reads it half-written.
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.holder), { mode: 0o600 });
    renameSync(tmp, this.path);
  }

  release() {
    if (this.released) return;
    this.released = true;
    process.removeListener('exit', this.onExit);
    try {
      const current = readHolder(this.path);
      if (current?.pid === process.pid) unlinkSync(this.path);
    } catch { /* already gone */ }
  }
}

/** A lock (or a takeover claim) unreadable for longer than this holds nobody. */
const STALE_MS = 1000;

function sleepMs(ms: number) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Creates `path` with `holder` in it, unless it exists (then false). */
function createExclusive(path: string, holder: LockHolder): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, JSON.stringify(holder));
  } finally {
    closeSync(fd);
  }
  return true;
}

/** One lock file as it was read: its holder (null when unreadable), which file it was, and how long since it was written. */
export interface SeenLock { holder: LockHolder | null; id: string; ageMs: number }

/**
 * Reads the lock file at `path` (null when there is none). `id` names that very file — its inode,
 * times and content, read from one open descriptor — so that a later look can tell whether `path`
 * is still it or another file made since (a lock file removed and made again can get the same
 * inode back, not the same times and content too).
 */
export function examineLock(path: string): SeenLock | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    const text = readFileSync(fd, 'utf8');
    const id = createHash('sha256').update(`${st.dev}:${st.ino}:${st.mtimeNs}:${st.ctimeNs}:${st.size}\n${text}`).digest('hex').slice(0, 24);
    return { holder: parseHolder(text), id, ageMs: Date.now() - Number(st.mtimeMs) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes the stale lock file `seen`, and only that file; false when another process is busy
 * taking it over.
 *
 * Two processes that find the same stale lock must not both remove "the lock": the slower one
 * would remove the lock the faster one has just made in its place, and both would open the
 * database. So the right to remove one lock file is claimed first, with a file of its own made
 * exclusively (`lock.takeover-<id>-<n>`), and the claimer removes the lock only if `path` is still
 * that file. While the claim stands nobody else removes the file, and nobody can make a new lock
 * while it is there: between that check and the removal `path` cannot change. A process that finds
 * the claim taken by a live process leaves the file to it. A claim is removed by its maker only;
 * one whose maker died (or unreadable for over a second: it died writing it) is passed over for
 * the next number, so a process killed in the middle of a takeover holds up nobody.
 */
function removeStale(path: string, seen: SeenLock, me: LockHolder): boolean {
  const claims: string[] = [];
  for (let n = 0; ; n++) {
    const claim = `${path}.takeover-${seen.id}-${n}`;
    if (createExclusive(claim, me)) {
      try {
        if (examineLock(path)?.id === seen.id) unlinkSync(path);
        return true;
      } finally {
        // Ours, and those of makers who died: nobody is waiting on them.
        for (const c of [...claims, claim]) try { unlinkSync(c); } catch { /* already gone */ }
      }
    }
    const other = examineLock(claim);
    if (!other) return false; // its maker finished just now: look at the lock again
    const dead = other.holder ? other.holder.host === me.host && !processRuns(other.holder.pid) : other.ageMs > STALE_MS;
    if (!dead) return false;
    claims.push(claim);
  }
}

export function readHolder(path: string): LockHolder | null {
  try {
    return parseHolder(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
}

function parseHolder(text: string): LockHolder | null {
  try {
    const parsed = JSON.parse(text) as LockHolder;
    return typeof parsed?.pid === 'number' ? parsed : null;
  } catch {
    return null;
  }
}
