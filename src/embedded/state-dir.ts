import { resolve } from 'node:path';

export const DEFAULT_STATE_DIR = './state';

/** The embedded state directory: `--state`, else EDGEPLANE_STATE, else ./state. */
export function stateDirOf(opts: { stateDir?: string }): string {
  return resolve(opts.stateDir ?? process.env.EDGEPLANE_STATE ?? DEFAULT_STATE_DIR);
}
