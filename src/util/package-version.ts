import { readFileSync } from 'node:fs';

let version: string | undefined;

/** This package's version, from its package.json (`src/` and `dist/` sit one level below it). */
export function packageVersion(): string {
  return (version ??= (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version);
}
