import type { StackLock } from '../../client/api-client.js';
import { envFlag } from '../../reconciler/manifests/environments.js';
import { stackOf } from '../environment.js';
import { CliExit, EXIT } from '../exit.js';
import { pidHereOf, userAtHost } from '../holder.js';
import { processRuns } from '../../util/process.js';
import { printable } from '../../util/text.js';
import type { Output } from '../output.js';
import { openTarget, targetArgs, type TargetFlags } from '../target.js';

export interface LockCommandFlags extends TargetFlags { stack?: string; env?: string; json?: boolean; force?: boolean }

function line(l: StackLock): string {
  return `stack "${printable(l.stack)}": locked by ${printable(l.holder)} since ${l.created_at}, expires ${l.expires_at} unless renewed (${l.id})`;
}

/** `lock status [DIR] [--stack S]`: the stack's lock, or every live lock of the account when neither is given. */
export async function lockStatus(out: Output, dir: string | undefined, flags: LockCommandFlags): Promise<void> {
  const chosen = dir !== undefined || flags.stack !== undefined || envFlag(flags.env) !== undefined ? stackOf(dir ?? '.', flags) : undefined;
  const stack = chosen?.stack;
  const client = await openTarget(flags, { root: dir ?? '.', environment: chosen?.environment });
  try {
    const locks = (await client.listLocks()).filter((l) => stack === undefined || l.stack === stack);
    if (flags.json) return out.json(locks);
    if (!locks.length) return out.line(stack === undefined ? 'no stack is locked' : `stack "${stack}": not locked`);
    for (const l of locks) out.line(line(l));
  } finally {
    await client.close();
  }
}

/**
 * `lock release --stack S`: releases a lock this user left on this machine (an apply killed before
 * it could: its process no longer runs); anyone's with `--force`. Without `--force`, a lock another
 * holds, or one whose process still runs here, is exit 5.
 */
export async function lockRelease(out: Output, dir: string | undefined, flags: LockCommandFlags): Promise<void> {
  if (dir === undefined && flags.stack === undefined) throw new CliExit(EXIT.error, 'lock release needs the stack: a manifest directory or --stack NAME');
  const { stack, environment } = stackOf(dir ?? '.', flags);
  const client = await openTarget(flags, { root: dir ?? '.', environment });
  try {
    const lock = (await client.listLocks()).find((l) => l.stack === stack);
    if (!lock) return out.line(`stack "${stack}": not locked`);
    const mine = lock.holder.startsWith(`${userAtHost()},`);
    if (!mine && !flags.force) {
      throw new CliExit(EXIT.locked, `${line(lock)}\nnot released: it is not yours (this user on this machine). If it is no longer running: edgeplane lock release --stack ${stack}${targetArgs(flags)} --force`);
    }
    const pid = mine ? pidHereOf(lock.holder) : undefined;
    if (pid && pid !== process.pid && processRuns(pid) && !flags.force) {
      throw new CliExit(EXIT.locked, `${line(lock)}\nnot released: its process (pid ${pid}) is still running on this machine; releasing it would let another apply write the stack beside it. Stop it (Ctrl-C releases the lock), or: edgeplane lock release --stack ${stack}${targetArgs(flags)} --force`);
    }
    await client.releaseLock(lock.id);
    out.line(`released the lock on stack "${stack}" (held by ${printable(lock.holder)} since ${lock.created_at})`);
  } finally {
    await client.close();
  }
}
