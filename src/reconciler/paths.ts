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

/** A pattern's segments, when it has no wildcard (at most one path matches); undefined otherwise. */
export function plainPath(pattern: string): string[] | undefined {
  const segs = segments(pattern);
  return wild.get(pattern) ? undefined : segs;
}

/** No hits: shared (frozen), as most patterns match nothing in most objects. */
const NO_HITS: readonly Hit[] = Object.freeze([]);

/**
 * Every concrete path in `value` matching `pattern`, with the value found there. Hits share their
 * `path` arrays with the pattern's cache: callers copy before changing one.
 */
export function matchPaths(value: unknown, pattern: string): readonly Hit[] {
  const segs = segments(pattern);
  if (!wild.get(pattern)) {
    // No wildcard: at most one hit, found by walking the segments.
    let v = value;
    for (const seg of segs) {
      if (!v || typeof v !== 'object' || Array.isArray(v) || !(seg in (v as object))) return NO_HITS;
      v = (v as Record<string, unknown>)[seg];
    }
    return v === undefined ? NO_HITS : [{ path: segs, value: v }];
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
