import { ApiRequestError, type ApiClient, type StackLockHeld } from '../client/api-client.js';
import { processRuns } from '../util/process.js';
import { printable } from '../util/text.js';
import { acquireStackLock, DEFAULT_LOCK_TIMEOUT_MS, DEFAULT_LOCK_TTL_SECONDS, StackLockAborted, StackLockTimeout, type HeldStackLock } from '../reconciler/lock/stack-lock.js';
import { parseDuration } from './duration.js';
import { CliExit, EXIT, exitForSignal, onStopSignals } from './exit.js';
import { holderName, pidHereOf } from './holder.js';
import type { Output } from './output.js';
import { targetArgs, type TargetFlags, type TargetOptions } from './target.js';

export interface LockFlags extends TargetFlags { lockTimeout?: string }

/** The lock's TTL: `EDGEPLANE_LOCK_TTL` (a duration, 5 s to 1 h), default 60 s. */
export function ttlSeconds(env: NodeJS.ProcessEnv): number {
  if (!env.EDGEPLANE_LOCK_TTL) return DEFAULT_LOCK_TTL_SECONDS;
  const s = Math.round(parseDuration(env.EDGEPLANE_LOCK_TTL, 'EDGEPLANE_LOCK_TTL') / 1000);
  if (s < 3 || s > 3600) throw new CliExit(EXIT.error, `EDGEPLANE_LOCK_TTL must be from 3 s to 1 h, not ${env.EDGEPLANE_LOCK_TTL}`);
  return s;
}

/** How long apply and watch wait for their turn: for the stack's lock, and for a state directory another command holds. */
function lockTimeoutMs(flags: LockFlags): number {
  return flags.lockTimeout === undefined ? DEFAULT_LOCK_TIMEOUT_MS : parseDuration(flags.lockTimeout, '--lock-timeout (EDGEPLANE_LOCK_TIMEOUT)');
}

/**
 * `openTarget`'s options for a command that takes the stack's lock: on the embedded default, a
 * state directory another command holds without serving it (an apply) is waited for as the lock
 * is (--lock-timeout), instead of failing at once: two applies on one directory take turns.
 */
export function waitsForStateDir(out: Output, flags: LockFlags): Pick<TargetOptions, 'waitMs' | 'onWait'> {
  const waitMs = lockTimeoutMs(flags);
  return {
    waitMs,
    onWait: (h) => out.error(`the state directory is in use by process ${h.pid} (since ${h.started_at}): waiting up to ${Math.round(waitMs / 1000)} s (--lock-timeout)`),
  };
}

/**
 * On the embedded default, a lock whose holder ran on this machine and whose process is gone is
 * released, and said so: every holder of a state directory's locks runs on the machine that holds
 * the directory (its own process, or another one reaching it through that process), as the
 * directory's own lock already assumes. Without this, an apply killed outright (SIGKILL, a crash)
 * made the next one wait out the lock's TTL. A lock of a service others share is never taken so:
 * a host name says too little there (containers alike, runners alike).
 */
async function reclaimDead(out: Output, client: ApiClient, stack: string, held: StackLockHeld): Promise<boolean> {
  const pid = pidHereOf(held.holder);
  if (pid === undefined || pid === process.pid || processRuns(pid)) return false;
  const lock = (await client.listLocks()).find((l) => l.stack === stack && l.holder === held.holder && l.created_at === held.created_at);
  if (lock) await client.releaseLock(lock.id);
  out.error(`stack "${stack}": the lock of ${printable(held.holder)} was left by a process that no longer runs on this machine: released`);
  return true;
}

/**
 * Runs `fn` holding the stack's lock: taken first (waiting up to --lock-timeout while another
 * holds it: exit 5 when it runs out), renewed meanwhile, released at the end. A signal before `fn`
 * has its own handlers (`held.handlesSignals`) releases it and exits at once.
 */
export async function lockedRun<T>(out: Output, client: ApiClient, stack: string, flags: LockFlags & { json?: boolean }, command: string, fn: (held: HeldStackLock, phase: { executing: boolean }) => Promise<T>): Promise<T> {
  const timeoutMs = lockTimeoutMs(flags);
  let held: HeldStackLock;
  // Ctrl-C (or SIGTERM) while the lock is being taken: the take ends, and a lock its request got
  // after all is released, instead of being left for its TTL. A second signal exits at once.
  const taking = new AbortController();
  const whileTaking = (signal: NodeJS.Signals) => {
    if (taking.signal.aborted) exitForSignal(signal);
    taking.abort(signal);
  };
  const offTaking = onStopSignals(whileTaking);
  try {
    held = await acquireStackLock(client, {
      signal: taking.signal,
      stack, holder: holderName(command), ttlSeconds: ttlSeconds(process.env), timeoutMs,
      releaseHint: `edgeplane lock release --stack ${stack}${targetArgs(flags)} --force`,
      reclaim: client.target.startsWith('embedded:') ? (h) => reclaimDead(out, client, stack, h) : undefined,
      onWait: (h) => out.error(`stack "${stack}" is locked by ${printable(h.holder)} since ${h.created_at}: waiting up to ${Math.round(timeoutMs / 1000)} s (--lock-timeout)`),
      onLost: (why) => out.error(`error: ${why}`),
    });
  } catch (err) {
    if (err instanceof StackLockAborted) {
      out.error(`\ninterrupted (${String(taking.signal.reason)}): ${err.message}`);
      exitForSignal(String(taking.signal.reason));
    }
    if (err instanceof StackLockTimeout) {
      if (flags.json) out.json({ event: 'error', error: err.message, exit_code: EXIT.locked });
      throw new CliExit(EXIT.locked, `${command}: ${err.message}`);
    }
    // A key of scope read: the lock is the first write, so nothing was written; said plainly.
    if (err instanceof ApiRequestError && err.code === 'ERR_FORBIDDEN_SCOPE') {
      const details = (err.body as { details?: { scope?: string; stacks?: string } }).details ?? {};
      const scope = details.scope ?? 'read';
      // A stack-limited key asked for another stack's lock.
      const message = details.stacks !== undefined
        ? `the API key may write only stack${details.stacks.includes(',') ? 's' : ''} ${details.stacks.split(',').join(', ')}: ${command.split(' ')[0]} of this stack needs a key of it (edgeplane admin keys create --stacks …)`
        : `the API key can only ${scope === 'read' ? 'read' : scope} (scope ${scope}): ${command.split(' ')[0]} needs a write key (edgeplane admin keys create --scope write)`;
      if (flags.json) out.json({ event: 'error', error: message, exit_code: EXIT.error });
      throw new CliExit(EXIT.error, message);
    }
    // The service could not be reached or refused the key: a machine reading stdout learns why too.
    if (flags.json) out.json({ event: 'error', error: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    offTaking();
  }
  const phase = { executing: false };
  const onSignal = (signal: NodeJS.Signals) => {
    if (phase.executing) return; // the executor stops its steps, reports, and the lock is released after
    out.error(`\ninterrupted (${signal}): releasing the lock on stack "${stack}"`);
    void held.release().finally(() => exitForSignal(signal));
  };
  const offSignal = onStopSignals(onSignal);
  try {
    return await fn(held, phase);
  } finally {
    offSignal();
    // A signal while releasing (`timeout` sends its SIGTERM twice, ms apart) waits for the release.
    const releasing = held.release();
    const late = (signal: NodeJS.Signals) => void releasing.finally(() => exitForSignal(signal));
    const offLate = onStopSignals(late);
    try {
      await releasing;
    } finally {
      offLate();
    }
  }
}
