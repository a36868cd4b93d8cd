import { isAbsolute, relative, resolve } from 'node:path';

/**
 * A path as messages show it: relative to the working directory when it is inside it (what the
 * user typed, and can paste back), else absolute. `../../../tmp/x` names the same file, but no
 * one reads it as such.
 */
export function displayPath(path: string, cwd = process.cwd()): string {
  const abs = resolve(cwd, path);
  const rel = relative(cwd, abs);
  if (rel === '') return '.';
  if (rel === '..' || rel.startsWith('../') || rel.startsWith('..\\') || isAbsolute(rel)) return abs;
  return rel;
}

/** A directory as remarks name it: `./state` rather than `state`, which reads as a word. */
export function displayDir(dir: string, cwd = process.cwd()): string {
  const shown = displayPath(dir, cwd);
  return isAbsolute(shown) || shown === '.' ? shown : `./${shown}`;
}
