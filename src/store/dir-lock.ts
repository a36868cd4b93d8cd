import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export interface LockHolder { pid: number; host: string; started_at: string; url?: string }

export class LockHeldError extends Error {
  constructor(readonly dir: string, readonly holder: LockHolder) {
    super(
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
      // Unreadable lock: its writer is between open and write; give it a moment.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
    const holder = readHolder(path);
    throw new LockHeldError(dir, holder ?? { pid: -1, host: me.host, started_at: 'unknown' });
  }

  /** Records the URL the holder serves on, so a second process can tell the user where to go. */
  setUrl(url: string) {
    this.holder = { ...this.holder, url };
    writeFileSync(this.path, JSON.stringify(this.holder));
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

export function readHolder(path: string): LockHolder | null {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as LockHolder;
    return typeof parsed.pid === 'number' ? parsed : null;
  } catch {
    return null;
  }
}
