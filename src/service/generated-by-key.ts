import { createRequire } from 'node:module';

/**
 * A directory `npm run schemas` writes (the service's validators, its response serializers): one
 * CommonJS file per schema, `<key>.cjs`, and `index.cjs`, the list of keys. The index is read when
 * first asked for; a file is required when its key is first asked for, so a command loads only
 * what its routes use. A checkout without the directory (before `npm run schemas` writes it) has
 * none: the caller compiles its schema then. `dir`: the directory's URL, with a trailing slash.
 */
export function generatedByKey<T>(dir: URL): { keys(): Set<string>; get(key: string): T | undefined } {
  const require = createRequire(new URL('index.cjs', dir));
  let keys: Set<string> | undefined;
  const keysOf = (): Set<string> => {
    if (!keys) {
      try {
        keys = new Set(require('./index.cjs') as string[]);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
        keys = new Set();
      }
    }
    return keys;
  };
  // Only a key of the index names a file: nothing else is required from here.
  return { keys: keysOf, get: (key) => (keysOf().has(key) ? (require(`./${key}.cjs`) as T) : undefined) };
}
