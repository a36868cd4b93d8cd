import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * Where the embedded state directory is, and whether it holds a database: no more than paths, so
 * the CLI can look before it loads anything (`spare.ts`). `state-dir.ts` has the rest.
 */
export const DEFAULT_STATE_DIR = './state';

/** The key ring file of a state directory used when EDGEPLANE_SECRETS_KEYS is not set (state-dir.ts). */
export const STATE_KEYS_FILE = 'secrets.keys';

/** The embedded state directory: `--state`, else EDGEPLANE_STATE, else ./state. */
export function stateDirOf(opts: { stateDir?: string }): string {
  return resolve(opts.stateDir ?? process.env.EDGEPLANE_STATE ?? DEFAULT_STATE_DIR);
}

/** Whether the directory holds an embedded database (a directory without one would get one made on open). */
export function hasEmbeddedState(dir: string): boolean {
  return existsSync(join(dir, 'pgdata'));
}

/**
 * The state directory of a command that writes (apply, watch, serve, admin), made if it is not
 * there; true when it was made (the CLI says so in one line: a command run in the wrong working
 * directory shows where its database went). A new directory gets a `.gitignore` of `*`: its
 * database holds every secret applied (sealed) and `secrets.keys` the key that opens them, and a
 * state directory inside a repository of manifests is the usual case (`./state`).
 */
export function ensureStateDir(dir: string): boolean {
  if (existsSync(dir)) return false;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, '.gitignore'), '# edgeplane\'s embedded database and the key of its secrets: never commit them\n*\n');
  return true;
}
