import { closeSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * An exclusive, process-level lock on a directory: a file created with O_EXCL holding the holder's
 * pid (and URL once it serves). PGlite has no locking of its own and two processes on one data
 * directory corrupt it, so this guards every open. A lock whose process is gone is taken over.
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
      try {
        const fd = openSync(path, 'wx', 0o600);
        writeSync(fd, JSON.stringify(me));
        closeSync(fd);
        return new DirLock(path, me);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = readHolder(path);
      if (holder && holder.host === me.host && !alive(holder.pid)) {
        try { unlinkSync(path); } catch { /* another process recovered it first */ }
        continue;
      }
      if (holder) throw new LockHeldError(dir, holder);
      // Unreadable lock: its writer is between open and write (microseconds), or it died there, or
      // the file was damaged. Written in one call and replaced by rename, a lock is never unreadable
      // for long: one unreadable for over a second holds nobody, and is taken over.
      if (unreadableFor(path) > STALE_UNREADABLE_MS) {
        try { unlinkSync(path); } catch { /* another process recovered it first */ }
        continue;
      }
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
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

const STALE_UNREADABLE_MS = 1000;

/** How long the lock file has gone unchanged (0 when it is gone or unreadable as a file). */
function unreadableFor(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

export function readHolder(path: string): LockHolder | null {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as LockHolder;
    return typeof parsed.pid === 'number' ? parsed : null;
  } catch {
    return null;
  }
}
