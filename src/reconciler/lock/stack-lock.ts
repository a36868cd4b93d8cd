import type { ApiClient, StackLock, StackLockHeld } from '../../client/api-client.js';
import { printable } from '../../util/text.js';

/**
 * How long a lock lives without renewal: a killed apply's lock frees the stack by itself after
 * this, so the next apply (through `serve` or a shared service, where no process check can tell
 * the holder is gone) waits at most this long. A live holder renews it every `beatMs`.
 */
export const DEFAULT_LOCK_TTL_SECONDS = 15;
/** A live holder renews at least this often: a lock released by force is noticed within it. */
export const MAX_BEAT_MS = 2000;

/** Between two renewals: a third of the TTL, at most `MAX_BEAT_MS`, at least half a second. */
export function beatMs(ttlSeconds: number): number {
  return Math.max(500, Math.min(MAX_BEAT_MS, (ttlSeconds * 1000) / 3));
}
/** How long an apply waits for a lock another one holds (CI merges minutes apart). */
export const DEFAULT_LOCK_TIMEOUT_MS = 120_000;

export interface LockOptions {
  stack: string;
  /** Who takes it: user@host, pid, CI run (`holderName`). */
  holder: string;
  ttlSeconds?: number;
  /** How long to wait for a held lock; 0: fail at once. */
  timeoutMs?: number;
  /** Between two tries while waiting: from a quarter second, growing to 2 s (never beyond the deadline). */
  pollMs?: number;
  /** Told once, when the lock is found held and the wait starts. */
  onWait?: (held: StackLockHeld) => void;
  /** Told when the lock was lost (expired and taken by another, or released by force). */
  onLost?: (why: string) => void;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  /**
   * Aborted (Ctrl-C) while the lock is being taken: the wait ends, and a lock the request in flight
   * got after all is released before `StackLockAborted` is thrown.
   */
  signal?: AbortSignal;
  /**
   * Asked once for each lock found held: whether its holder is known to have stopped and the lock
   * was released for it (the embedded default, where a holder on this machine whose process is
   * gone cannot be running). True: the lock is taken again at once, without waiting.
   */
  reclaim?: (held: StackLockHeld) => Promise<boolean>;
}

export class StackLockAborted extends Error {
  constructor(readonly stackName: string) {
    super(`stopped while taking the lock on stack "${stackName}"; nothing is held`);
    this.name = 'StackLockAborted';
  }
}

export class StackLockTimeout extends Error {
  constructor(readonly stackName: string, readonly held: StackLockHeld, waitedMs: number, release: string) {
    super(`stack "${stackName}" is locked by ${printable(held.holder)} since ${held.created_at} (expires ${held.expires_at} unless renewed); waited ${Math.round(waitedMs / 1000)} s (--lock-timeout). If it is no longer running, release the lock: ${release}`);
    this.name = 'StackLockTimeout';
  }
}

/** A lock this process holds: renewed in the background until `release`. `signal` aborts when it is lost. */
export interface HeldStackLock {
  readonly lock: StackLock;
  readonly signal: AbortSignal;
  /**
   * Whether the lock still holds by this process's own clock: false (and `signal` aborted) once the
   * TTL since the last take or renewal that succeeded has nearly run out, whether or not a renewal
   * has told so yet. A process stalled past its TTL (a laptop asleep, a paused VM, SIGSTOP) learns
   * it here, before starting another write, not at the next renewal.
   */
  valid(): boolean;
  /**
   * Asks the service now whether the lock is still this process's (a renewal): false, and
   * `signal` aborted, when it was released by force or expired. An apply asks once its last step
   * is done, so a release by force that came after the last beat still fails it.
   */
  confirm(): Promise<boolean>;
  release(): Promise<void>;
}

/**
 * Takes the stack's lock, waiting (polling) while another holds it, up to `timeoutMs`; then
 * renews it every `beatMs(ttl)` until released. A renewal that finds the lock gone (it
 * expired, the process having stalled past its TTL, or someone released it by force) aborts
 * `signal`: the caller stops starting writes. A renewal that fails (the service unreachable) is
 * tried again at the next beat: the lock still holds until it expires.
 */
export async function acquireStackLock(client: ApiClient, opts: LockOptions & { releaseHint: string }): Promise<HeldStackLock> {
  const ttl = opts.ttlSeconds ?? DEFAULT_LOCK_TTL_SECONDS;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const now = opts.now ?? Date.now;
  const sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  const started = now();
  let told = false;
  let pause = opts.pollMs ?? 250;
  let lock: StackLock;
  /** When the last take or renewal that succeeded was sent: the lock holds for the TTL from then, at least. */
  let validFrom = started;
  /** Locks already offered to `reclaim` (by holder and start): each is asked about once. */
  const reclaimed = new Set<string>();
  for (;;) {
    if (opts.signal?.aborted) throw new StackLockAborted(opts.stack);
    const sent = now();
    const got = await client.takeLock(opts.stack, opts.holder, ttl);
    if (opts.signal?.aborted) {
      if ('lock' in got) await client.releaseLock(got.lock.id).catch(() => {}); // else it expires by itself
      throw new StackLockAborted(opts.stack);
    }
    if ('lock' in got) {
      validFrom = sent;
      lock = got.lock;
      break;
    }
    const seen = `${got.held.holder}\0${got.held.created_at}`;
    if (opts.reclaim && !reclaimed.has(seen)) {
      reclaimed.add(seen);
      if (await opts.reclaim(got.held)) continue;
    }
    const waited = now() - started;
    if (waited >= timeoutMs) throw new StackLockTimeout(opts.stack, got.held, waited, opts.releaseHint);
    if (!told) opts.onWait?.(got.held);
    told = true;
    await unlessAborted(sleep(Math.min(pause, Math.max(1, timeoutMs - waited))), opts.signal);
    if (opts.pollMs === undefined) pause = Math.min(2000, pause * 1.5);
  }
  const lost = new AbortController();
  const lose = (why: string) => {
    if (lost.signal.aborted) return;
    lost.abort(new Error(why));
    opts.onLost?.(why);
  };
  // A margin for the clocks of this process and the service, and for a request in flight.
  const margin = Math.min(5000, (ttl * 1000) / 6);
  let released = false;
  let beat: Promise<void> = Promise.resolve();
  /** One renewal, after the one before it; true when it found the lock gone. */
  const renew = () => (beat = beat.then(async () => {
    if (released || lost.signal.aborted) return;
    try {
      const sent = now();
      if (await client.renewLock(lock.id, ttl)) validFrom = sent;
      else if (!released) lose(`the lock on stack "${opts.stack}" was lost (it expired or was released by force): stopping`);
    } catch {
      // Unreachable for now: the next beat tries again, well before the lock expires.
    }
  }));
  const timer = setInterval(() => void renew(), beatMs(ttl));
  timer.unref?.();
  const valid = () => {
    if (!released && !lost.signal.aborted && now() >= validFrom + ttl * 1000 - margin) {
      lose(`the lock on stack "${opts.stack}" ran out before it could be renewed (this process stalled for ${Math.round((now() - validFrom) / 1000)} s): stopping`);
    }
    return !lost.signal.aborted;
  };
  return {
    lock,
    signal: lost.signal,
    valid,
    async confirm() {
      await renew();
      return valid();
    },
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      await beat;
      await client.releaseLock(lock.id).catch(() => {}); // gone already, or unreachable: it expires by itself
    },
  };
}

/** Runs `fn` holding the stack's lock (taken first, released after, whatever happens). */
export async function withStackLock<T>(client: ApiClient, opts: LockOptions & { releaseHint: string }, fn: (held: HeldStackLock) => Promise<T>): Promise<T> {
  const held = await acquireStackLock(client, opts);
  try {
    return await fn(held);
  } finally {
    await held.release();
  }
}

/**
 * Settles when `wait` does or `signal` aborts, whichever is first. The abort listener is removed
 * as it settles: a wait of many polls on one long-lived signal adds none that stay.
 */
function unlessAborted(wait: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return wait;
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void wait.then(done, done);
  });
}
