/** Exit codes of the CLI contract (reconciler.md): commands throw `CliExit` to choose one. */
export const EXIT = { ok: 0, error: 1, changes: 2, blocked: 3, stale: 4, locked: 5 } as const;

export class CliExit extends Error {
  constructor(readonly code: number, message = '') {
    super(message);
    this.name = 'CliExit';
  }
}
