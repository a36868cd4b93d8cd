import { setOwn } from './own.js';

/** JSON with object keys sorted at every level: one text per value, so it can be compared and hashed. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value as object).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) setOwn(out, k, sortKeys(v));
    }
    return out;
  }
  return value;
}
