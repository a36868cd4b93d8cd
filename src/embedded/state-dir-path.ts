import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * Where the embedded state directory is, and whether it holds a database: no more than paths, so
 * the CLI can look before it loads anything (`spare.ts`). `state-dir.ts` has the rest.
 */
export const DEFAULT_STATE_DIR = './state';

/** The embedded state directory: `--state`, else EDGEPLANE_STATE, else ./state. */
export function stateDirOf(opts: { stateDir?: string }): string {
  return resolve(opts.stateDir ?? process.env.EDGEPLANE_STATE ?? DEFAULT_STATE_DIR);
}

/** Whether the directory holds an embedded database (a directory without one would get one made on open). */
export function hasEmbeddedState(dir: string): boolean {
  return existsSync(join(dir, 'pgdata'));
}
