import { distance } from 'fastest-levenshtein';
import picomatch from 'picomatch';

/**
 * Selectors name objects of a stack by manifest identity: `Kind/name`, a route
 * `HTTPSEdge/edge/routes/route`, or a glob of either (`HTTPSEdge/shop-*`; `*` stays within one
 * segment). `--target` and the stack file's `safety.protect` read them.
 */
export interface Selector {
  text: string;
  /** Whether the selector names this identity itself. */
  matches(identity: string): boolean;
}

const GLOB = /[*?[\]{}!]/;

export function selector(text: string): Selector {
  const s = text.trim();
  if (!GLOB.test(s)) return { text: s, matches: (identity) => identity === s };
  const m = picomatch(s, { dot: true });
  return { text: s, matches: (identity) => m(identity) };
}

/** The identities an object's identity sits under (an edge for its routes), nearest last. */
export function ancestors(identity: string): string[] {
  const parts = identity.split('/');
  const out: string[] = [];
  for (let n = 2; n < parts.length; n += 2) out.push(parts.slice(0, n).join('/'));
  return out;
}

/** Whether any selector names the identity or one of the objects it sits under. */
export function selectsWithin(selectors: Selector[], identity: string): boolean {
  return selectors.some((s) => s.matches(identity) || ancestors(identity).some((a) => s.matches(a)));
}

/** Up to `n` of `names` nearest to `text` by edit distance (case aside), nearest first. */
export function nearest(text: string, names: Iterable<string>, n = 3): string[] {
  const t = text.toLowerCase();
  return [...new Set(names)]
    .map((name) => ({ name, d: distance(t, name.toLowerCase()) }))
    .sort((a, b) => a.d - b.d || a.name.localeCompare(b.name))
    .slice(0, n)
    .map((x) => x.name);
}

export class UnknownSelectorError extends Error {
  constructor(readonly unknown: { selector: string; nearest: string[] }[]) {
    super(unknown.map((u) => `--target ${u.selector} names no object of this stack${u.nearest.length ? ` (nearest: ${u.nearest.join(', ')})` : ' (the stack has no objects)'}`).join('; '));
    this.name = 'UnknownSelectorError';
  }
}

/** Selectors that name none of `identities` (nor an object under one) are an error naming the nearest. */
export function checkSelectors(selectors: Selector[], identities: string[]): void {
  const unknown = selectors.filter((s) => !identities.some((i) => s.matches(i)));
  if (unknown.length) throw new UnknownSelectorError(unknown.map((s) => ({ selector: s.text, nearest: nearest(s.text, identities) })));
}
