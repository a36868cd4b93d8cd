/**
 * Text PostgreSQL cannot hold in `text` or `jsonb`: U+0000, and an unpaired UTF-16 surrogate (JSON
 * and URLs can carry both). A query given such text fails with an error of its own, so it is
 * stopped before it reaches the database.
 */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function isStorableText(s: string): boolean {
  return !UNSTORABLE.test(s);
}

/** Where a value holds text that cannot be stored: the path, and whether it is a key there. */
export interface UnstorableAt { path: (string | number)[]; key: boolean }

/**
 * Every string of a parsed value (keys too) that `isStorableText` refuses, in document order, or
 * only the first with `first`. Iterative: a request body may nest deeper than the call stack.
 */
export function unstorableText(value: unknown, opts: { first?: boolean } = {}): UnstorableAt[] {
  const out: UnstorableAt[] = [];
  const stack: [unknown, (string | number)[]][] = [[value, []]];
  while (stack.length && !(opts.first && out.length)) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (!isStorableText(v)) out.push({ path, key: false });
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], [...path, i]]);
    } else if (v && typeof v === 'object') {
      const keys = Object.keys(v);
      const inner: [unknown, (string | number)[]][] = [];
      for (const k of keys) {
        if (!isStorableText(k)) out.push({ path: [...path, k], key: true });
        else inner.push([(v as Record<string, unknown>)[k], [...path, k]]);
      }
      for (let i = inner.length - 1; i >= 0; i--) stack.push(inner[i]);
    }
  }
  return opts.first ? out.slice(0, 1) : out;
}

/** `['routes', 0, 'oidc']` → `routes[0].oidc`: how messages name a field. */
export function formatPath(path: readonly (string | number)[]): string {
  return path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}
