import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parseAllDocuments } from 'yaml';

/** The manifest documents of the examples (every kind and module at least once) and of the negative fixtures. */
export function exampleDocs(): Record<string, unknown>[] {
  const root = join(import.meta.dirname, '..', '..');
  const files = (dir: string): string[] => readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : /\.ya?ml$/.test(e.name) ? [join(dir, e.name)] : []));
  return [...files(join(root, 'examples')), ...files(join(root, 'test', 'fixtures', 'manifests', 'invalid'))].sort()
    .flatMap((f) => { try { return parseAllDocuments(readFileSync(f, 'utf8')).map((d) => d.toJSON()); } catch { return []; } })
    .filter((d): d is Record<string, unknown> => !!d && typeof d === 'object' && !Array.isArray(d) && typeof d.kind === 'string');
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * Variants of a value that break one rule each, at every place in it: each value replaced by a
 * value of another type, by an over-long or non-ASCII string, or by null; each key removed; an
 * unknown key added to each object; an array item duplicated.
 */
export function mutations(value: unknown): unknown[] {
  const out: unknown[] = [];
  const replacements = (v: unknown): unknown[] => [
    typeof v === 'string' ? 42 : 'text', null, 'é'.repeat(3000), 'x'.repeat(70_000), -1, 1.5, true, [], {}, ['x'],
  ];
  for (const r of replacements(value)) out.push(r);
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      for (const m of mutations(item)) out.push(value.map((x, j) => (j === i ? m : x)));
    });
    if (value.length) out.push([...value, value[0]]);
  } else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      for (const m of mutations(v)) out.push({ ...value, [k]: m });
      const { [k]: _gone, ...rest } = value;
      out.push(rest);
    }
    out.push({ ...value, not_a_field: 1 });
  }
  return out;
}

/** Every object inside a value (the value included), e.g. the bodies and modules inside a manifest. */
export function objectsIn(value: unknown): Record<string, unknown>[] {
  if (Array.isArray(value)) return value.flatMap(objectsIn);
  if (!isObject(value)) return [];
  return [value, ...Object.values(value).flatMap(objectsIn)];
}

type Check = ((input: unknown) => boolean) & { errors?: unknown };

/**
 * Runs a precompiled validator and a freshly compiled one over the same inputs: counts valid and
 * invalid outcomes into `outcomes`, and returns the inputs where they disagree (result or errors).
 */
export function disagreements(pre: Check, fresh: Check, inputs: unknown[], outcomes: { valid: number; invalid: number }): unknown[] {
  const differ: unknown[] = [];
  for (const input of inputs) {
    const ok = fresh(input);
    outcomes[ok ? 'valid' : 'invalid']++;
    if (pre(input) !== ok || !sameErrors(pre.errors ?? null, fresh.errors ?? null)) differ.push({ input, pre: pre.errors, fresh: fresh.errors });
  }
  return differ;
}

/**
 * isDeepStrictEqual of two error lists. Verbose errors carry the schema and its parent (the whole
 * schema of a body, for an error at its top): the same objects error after error, so each pair of
 * them is compared once, not once per input.
 */
function sameErrors(x: unknown, y: unknown): boolean {
  if (!Array.isArray(x) || !Array.isArray(y)) return isDeepStrictEqual(x, y);
  return x.length === y.length && x.every((e: Record<string, unknown>, i) => {
    const f = y[i] as Record<string, unknown>;
    const { schema: s, parentSchema: p, ...rest } = e;
    const { schema: fs, parentSchema: fp, ...frest } = f;
    return 'schema' in e === 'schema' in f && 'parentSchema' in e === 'parentSchema' in f
      && isDeepStrictEqual(rest, frest) && sameSchema(s, fs) && sameSchema(p, fp);
  });
}

const compared = new WeakMap<object, WeakMap<object, boolean>>();
function sameSchema(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object') return isDeepStrictEqual(a, b);
  let byB = compared.get(a);
  if (!byB) compared.set(a, (byB = new WeakMap()));
  let same = byB.get(b);
  if (same === undefined) byB.set(b, (same = isDeepStrictEqual(a, b)));
  return same;
}
