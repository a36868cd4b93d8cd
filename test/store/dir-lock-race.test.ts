import { mkdtempSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { DirLock, examineLock, readHolder } from '../../src/store/dir-lock.js';

/** No process has this pid (above any pid_max): a lock naming it was left by a process that died. */
const DEAD_PID = 2_147_483_646;
const deadLock = () => JSON.stringify({ pid: DEAD_PID, host: hostname(), started_at: '2026-01-01T00:00:00.000Z' });

/** A state directory whose lock was left by a dead process (even rounds) or left unreadable over a second ago (odd). */
function staleDir(round: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'ep-lock-race-'));
  const lock = join(dir, 'lock');
  if (round % 2 === 0) writeFileSync(lock, deadLock());
  else {
    writeFileSync(lock, '{"pid":');
    const old = new Date(Date.now() - 5000);
    utimesSync(lock, old, old);
  }
  return dir;
}

describe('taking over a stale directory lock', () => {
  it('several threads that find the same stale lock at once: exactly one gets it, every time', async () => {
    // Each removing "the lock" it found stale, the slower could remove the one the faster had
    // just made in its place, and both open the database: that happened in about one round in
    // ten with 3 racers.
    const rounds = 150;
    const workers = 3;
    const dirs = Array.from({ length: rounds }, (_, r) => staleDir(r));
    const shared = new SharedArrayBuffer(4 * (1 + rounds));
    await Promise.all(Array.from({ length: workers }, () => new Promise<void>((resolve, reject) => {
      const w = new Worker(new URL('../helpers/lock-racer.mjs', import.meta.url), {
        workerData: { module: new URL('../../src/store/dir-lock.ts', import.meta.url).href, dirs, workers, shared },
        execArgv: [],
      });
      w.on('error', reject);
      w.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`racer exited with ${code}`))));
    })));
    const winners = [...new Int32Array(shared).subarray(1)];
    const wrong = winners.map((n, round) => ({ round, n })).filter((r) => r.n !== 1);
    expect(wrong, 'rounds without exactly one winner').toEqual([]);
    // Each released its lock, and no takeover claim is left behind.
    for (const dir of dirs) expect(readdirSync(dir)).toEqual([]);
  }, 120_000);

  it('a takeover claim left by a process that died in the middle of one holds up nobody', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ep-lock-race-'));
    const lock = join(dir, 'lock');
    writeFileSync(lock, deadLock());
    const seen = examineLock(lock)!;
    writeFileSync(`${lock}.takeover-${seen.id}-0`, deadLock());
    const taken = DirLock.acquire(dir);
    expect(readHolder(lock)?.pid).toBe(process.pid);
    expect(readdirSync(dir)).toEqual(['lock']);
    taken.release();
    expect(readdirSync(dir)).toEqual([]);
  });
});
