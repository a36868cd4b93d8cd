/** Dotted field paths with `*` wildcards (`provider.*.client_secret`) over plain JSON values. */

export interface Hit { path: string[]; value: unknown }

/** Every concrete path in `value` matching `pattern`, with the value found there. */
export function matchPaths(value: unknown, pattern: string): Hit[] {
  const out: Hit[] = [];
  const walk = (v: unknown, segs: string[], at: string[]) => {
    if (segs.length === 0) {
      if (v !== undefined) out.push({ path: at, value: v });
      return;
    }
    if (!v || typeof v !== 'object' || Array.isArray(v)) return;
    const [head, ...rest] = segs;
    const obj = v as Record<string, unknown>;
    for (const key of head === '*' ? Object.keys(obj) : [head]) {
      if (key in obj) walk(obj[key], rest, [...at, key]);
    }
  };
  walk(value, pattern.split('.'), []);
  return out;
}

/** Replaces the value at each concrete path matching `pattern` (in a deep copy). */
export function mapPaths(value: unknown, pattern: string, fn: (v: unknown, path: string[]) => unknown): unknown {
  const hits = matchPaths(value, pattern);
  if (!hits.length) return value;
  const copy = structuredClone(value);
  return replaceHits(copy, matchPaths(copy, pattern), fn);
}

/**
 * The same in place, for a value the caller owns (a copy it made once for several rules): cloning
 * per rule was most of the cost of normalising thousands of objects.
 */
export function mapPathsInPlace(value: unknown, pattern: string, fn: (v: unknown, path: string[]) => unknown): unknown {
  return replaceHits(value, matchPaths(value, pattern), fn);
}

function replaceHits(value: unknown, hits: Hit[], fn: (v: unknown, path: string[]) => unknown): unknown {
  for (const h of hits) {
    let holder = value as Record<string, unknown>;
    for (const seg of h.path.slice(0, -1)) holder = holder[seg] as Record<string, unknown>;
    const last = h.path[h.path.length - 1];
    const next = fn(holder[last], h.path);
    if (next === undefined) delete holder[last];
    else holder[last] = next;
  }
  return value;
}
