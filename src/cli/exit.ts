import { constants } from 'node:os';
/** Exit codes of the CLI contract (reconciler.md): commands throw `CliExit` to choose one. */
export const EXIT = { ok: 0, error: 1, changes: 2, blocked: 3, stale: 4, locked: 5 } as const;

export class CliExit extends Error {
  constructor(readonly code: number, message = '') {
    super(message);
    this.name = 'CliExit';
  }
}

/**
 * The signals that stop a command cleanly: Ctrl-C, a cancelled CI job. Not SIGHUP: a handler for
 * it would replace the "ignore" that `nohup edgeplane watch &` relies on.
 */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

/** `handler` on every stop signal; returns what removes it. */
export function onStopSignals(handler: (signal: NodeJS.Signals) => void): () => void {
  for (const s of STOP_SIGNALS) process.on(s, handler);
  return () => {
    for (const s of STOP_SIGNALS) process.off(s, handler);
  };
}

/** Exits as a process killed by `signal` is reported by a shell: 128 + its number (130, 143). */
export function exitForSignal(signal: NodeJS.Signals | string): never {
  process.exit(128 + (constants.signals[signal as NodeJS.Signals] ?? constants.signals.SIGINT));
}
