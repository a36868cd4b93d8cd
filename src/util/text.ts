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

/** A place in a value: the last step, and the place it was taken from (null: the value itself). */
interface Place { parent: Place | null; step: string | number }

function pathOf(place: Place | null): (string | number)[] {
  const out: (string | number)[] = [];
  for (let p = place; p; p = p.parent) out.push(p.step);
  return out.reverse();
}

/**
 * Every string of a parsed value (keys too) that `isStorableText` refuses, in document order, or
 * only the first with `first`. Iterative, and linear in the value's size whatever its depth: each
 * place links to its parent, and a path is spelled out only for what is found (copying the path
 * at every level made a body of 40,000 nested arrays take 11 s of the event loop).
 */
export function unstorableText(value: unknown, opts: { first?: boolean } = {}): UnstorableAt[] {
  const out: UnstorableAt[] = [];
  const stack: [unknown, Place | null][] = [[value, null]];
  while (stack.length && !(opts.first && out.length)) {
    const [v, place] = stack.pop()!;
    if (typeof v === 'string') {
      if (!isStorableText(v)) out.push({ path: pathOf(place), key: false });
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], { parent: place, step: i }]);
    } else if (v && typeof v === 'object') {
      const keys = Object.keys(v);
      const inner: [unknown, Place][] = [];
      for (const k of keys) {
        if (!isStorableText(k)) out.push({ path: pathOf({ parent: place, step: k }), key: true });
        else inner.push([(v as Record<string, unknown>)[k], { parent: place, step: k }]);
      }
      for (let i = inner.length - 1; i >= 0; i--) stack.push(inner[i]);
    }
  }
  return opts.first ? out.slice(0, 1) : out;
}

/**
 * Whether a parsed value nests arrays and objects more than `max` levels deep (iterative, stops
 * at the first place too deep). Request bodies are refused past `MAX_BODY_DEPTH`: the API's
 * deepest field is a few levels down, and code walking a value by recursion would overflow the
 * call stack on a body of nothing but brackets.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (!v || typeof v !== 'object') continue;
    if (depth >= max) return true;
    if (Array.isArray(v)) for (let i = 0; i < v.length; i++) stack.push([v[i], depth + 1]);
    else for (const k in v) stack.push([(v as Record<string, unknown>)[k], depth + 1]);
  }
  return false;
}

/** `['routes', 0, 'oidc']` → `routes[0].oidc`: how messages name a field. */
export function formatPath(path: readonly (string | number)[]): string {
  return path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

/**
 * Characters a terminal or a CI log would act on rather than show: C0 and C1 controls (ESC, CR,
 * LF, TAB…), DEL, the line and paragraph separators, and the bidirectional controls that reorder
 * what is shown (Trojan Source). Text a person reads as a name (a stack lock's holder and stack)
 * may hold none of them.
 */
const UNPRINTABLE = /[\u0000-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/;
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, 'g');

export function isPrintableText(s: string): boolean {
  return !UNPRINTABLE.test(s);
}

/**
 * `s` with each character `isPrintableText` refuses written as `\u{…}`: text from elsewhere (a
 * lock's holder another version of the service stored) printed without acting on the terminal or
 * on a CI log (a line starting `::warning::` is a GitHub Actions command only at a line's start).
 */
export function printable(s: string): string {
  return s.replace(UNPRINTABLE_ALL, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}
