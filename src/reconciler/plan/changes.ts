import type { Body } from '../../kinds/types.js';
import { getOwn } from '../../util/own.js';
import { same } from './normalize.js';
import { isRefToken, isSecretToken } from './tokens.js';
import type { Change } from './types.js';

export const SENSITIVE = '(sensitive)';

/** A value as people read it: references by identity, secrets masked. */
export function display(v: unknown): unknown {
  if (isSecretToken(v)) return SENSITIVE;
  if (isRefToken(v)) return v.$ref;
  if (Array.isArray(v)) return v.map(display);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, display(x)]));
  return v;
}

function hasSecret(v: unknown): boolean {
  if (isSecretToken(v)) return true;
  if (Array.isArray(v)) return v.some(hasSecret);
  if (v && typeof v === 'object') return Object.values(v).some(hasSecret);
  return false;
}

function change(path: string, before: unknown, after: unknown): Change {
  const c: Change = { path };
  if (before !== undefined) c.before = display(before);
  if (after !== undefined) c.after = display(after);
  if (hasSecret(before) || hasSecret(after)) c.sensitive = true;
  return c;
}

function isPlainObject(v: unknown): v is Body {
  return !!v && typeof v === 'object' && !Array.isArray(v) && !isSecretToken(v) && !isRefToken(v);
}

/** Leaf-level differences of two normal values (objects descend; arrays and scalars compare whole). */
export function diffValues(prefix: string, before: unknown, after: unknown): Change[] {
  if (same(before, after)) return [];
  if ((isPlainObject(before) || before === undefined) && (isPlainObject(after) || after === undefined) && (before ?? after) !== undefined) {
    before ??= {};
    after ??= {};
    const b = before as Body;
    const a = after as Body;
    const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])].sort();
    return keys.flatMap((k) => diffValues(prefix ? `${prefix}.${k}` : k, getOwn(b, k), getOwn(a, k)));
  }
  return [change(prefix, before, after)];
}

/** Every field of a new object, as "after" values. */
export function creationChanges(fields: Body): Change[] {
  return Object.entries(fields).flatMap(([k, v]) => diffValues(k, undefined, v));
}
