/** Dotted field paths with `*` wildcards (`provider.*.client_secret`) over plain JSON values. */

export interface Hit { path: string[]; value: unknown }

const split = new Map<string, string[]>();
const wild = new Map<string, boolean>();
function segments(pattern: string): string[] {
  let s = split.get(pattern);
  if (!s) {
    split.set(pattern, (s = pattern.split('.')));
    wild.set(pattern, s.includes('*'));
  }
  return s;
}

/**
 * Every concrete path in `value` matching `pattern`, with the value found there. Hits share their
 * `path` arrays with the pattern's cache: callers copy before changing one.
 */
export function matchPaths(value: unknown, pattern: string): Hit[] {
  const segs = segments(pattern);
  if (!wild.get(pattern)) {
    // No wildcard: at most one hit, found by walking the segments.
    let v = value;
    for (const seg of segs) {
      if (!v || typeof v !== 'object' || Array.isArray(v) || !(seg in (v as object))) return [];
      v = (v as Record<string, unknown>)[seg];
    }
    return v === undefined ? [] : [{ path: segs, value: v }];
  }
  const out: Hit[] = [];
  walk(value, segs, 0, [], out);
  return out;
}

// A top-level function, not a closure per call: matching runs for every rule of every object.
function walk(v: unknown, segs: string[], i: number, at: string[], out: Hit[]) {
  if (i === segs.length) {
    if (v !== undefined) out.push({ path: at, value: v });
    return;
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return;
  const head = segs[i];
  const obj = v as Record<string, unknown>;
  for (const key of head === '*' ? Object.keys(obj) : [head]) {
    if (key in obj) walk(obj[key], segs, i + 1, [...at, key], out);
  }
}

/** Replaces the value at each concrete path matching `pattern` (in a deep copy). */
export function mapPaths(value: unknown, pattern: string, fn: (v: unknown, path: string[]) => unknown): unknown {
  const hits = matchPaths(value, pattern);
  if (!hits.length) return value;
  const copy = structuredClone(value);
  return replaceHits(copy, hits, fn);
}

/** Replaces the value at each hit's path (hits found in `value` or in an identical copy of it). */
export function replaceHits(value: unknown, hits: Hit[], fn: (v: unknown, path: string[]) => unknown): unknown {
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
