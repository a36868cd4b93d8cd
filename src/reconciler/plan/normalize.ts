import { NORMALIZERS } from '../../kinds/normalizers.js';
import type { Body, KindDef, KindRuntimeConfig, ModuleDef, RefDef, ReconcileRules } from '../../kinds/types.js';
import { canonicalJson } from '../../util/canonical-json.js';
import { mapPaths } from '../paths.js';
import { isRefToken, isSecretToken, type RefToken } from './tokens.js';

/** Maps a raw id to the identity of the managed object it names (or leaves it as is). */
export type Symbolize = (id: string) => string | RefToken;

/** The deployment settings some defaults depend on (the service's vendor prefix). */
export const DEFAULT_CONFIG: KindRuntimeConfig = { vendorPrefix: 'service' };

/**
 * The comparable form of a body, from the rules declared with each kind and module: defaults filled
 * in, derived fields dropped, references as identities, sets sorted, named normalisers applied,
 * optional strings cleared to absent. Used on both sides of the diff, and by export.
 */
export interface Normal { fields: Body; modules: Record<string, Body> }

function applyRules(value: Body, rules: ReconcileRules | undefined): Body {
  let v: unknown = value;
  for (const [path, dflt] of Object.entries(rules?.fill ?? {})) v = fillAt(v, path, dflt);
  for (const [path, name] of Object.entries(rules?.normalize ?? {})) v = mapPaths(v, path, NORMALIZERS[name]);
  for (const path of rules?.sets ?? []) v = mapPaths(v, path, asSet);
  return v as Body;
}

/** Sets `path`'s last key to `dflt` in every object its parent path reaches, where it is absent. */
function fillAt(v: unknown, path: string, dflt: unknown): unknown {
  const segs = path.split('.');
  const last = segs.pop()!;
  const fill = (o: unknown) => (o && typeof o === 'object' && !Array.isArray(o) && !(last in o) ? { ...(o as Body), [last]: structuredClone(dflt) } : o);
  return segs.length ? mapPaths(v, segs.join('.'), fill) : fill(v);
}

/** `null` is how clients say "the default": drop it so the default applies. */
function withoutNulls(b: Body): Body {
  return Object.fromEntries(Object.entries(b).filter(([, x]) => x !== null));
}

function asSet(v: unknown): unknown {
  if (!Array.isArray(v)) return v;
  const seen = new Map<string, unknown>();
  for (const x of v) seen.set(canonicalJson(x), x);
  return [...seen.keys()].sort().map((k) => seen.get(k));
}

function symbolizeRefs(value: Body, refs: RefDef[] | undefined, sym: Symbolize): Body {
  let v: unknown = value;
  const one = (x: unknown) => (typeof x === 'string' ? sym(x) : x);
  for (const r of refs ?? []) v = mapPaths(v, r.field, (x) => (r.many && Array.isArray(x) ? x.map(one) : one(x)));
  return v as Body;
}

/** Optional strings (description, metadata) read back absent when empty. */
function clearable(kind: KindDef, field: string): boolean {
  return kind.fields[field]?.type === 'string' && !kind.required?.includes(field);
}

export function normalizeModule(m: ModuleDef, given: Body, sym: Symbolize, config: KindRuntimeConfig = DEFAULT_CONFIG): Body {
  const own = m.normalize ? m.normalize(withoutNulls(given)) : withoutNulls(given);
  let v: Body = { ...(m.defaults ?? {}), ...(m.reconcile?.configDefaults?.(config) ?? {}), ...own };
  for (const d of m.derived ?? []) delete v[d];
  v = symbolizeRefs(v, m.refs, sym);
  return applyRules(v, m.reconcile);
}

export function normalize(kind: KindDef, body: Body, sym: Symbolize, config: KindRuntimeConfig = DEFAULT_CONFIG): Normal {
  let fields: Body = {};
  for (const f of Object.keys(kind.fields)) {
    if (f === 'metadata' || kind.derived?.includes(f)) continue;
    const v = f in body ? body[f] : kind.defaults?.[f];
    if (v === undefined || v === null || (v === '' && clearable(kind, f))) continue;
    fields[f] = v;
  }
  fields = applyRules(symbolizeRefs(fields, kind.refs, sym), kind.reconcile);
  const modules: Record<string, Body> = {};
  for (const m of kind.modules ?? []) {
    const v = body[m.name];
    if (v && typeof v === 'object') modules[m.name] = normalizeModule(m, v as Body, sym, config);
  }
  return { fields, modules };
}

/** Whether two normal values are the same (secrets by fingerprint only). */
export function same(a: unknown, b: unknown): boolean {
  return canonicalJson(comparable(a)) === canonicalJson(comparable(b));
}

function comparable(v: unknown): unknown {
  if (isSecretToken(v)) return { secret: v.fingerprint ?? 'unknown' };
  if (isRefToken(v)) return v;
  if (Array.isArray(v)) return v.map(comparable);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, comparable(x)]));
  return v;
}

/** The value a field returns to when the manifest no longer sets it (PATCH cannot omit it back). */
export function resetValue(kind: KindDef, field: string): unknown {
  if (kind.defaults && field in kind.defaults) return kind.defaults[field];
  if (clearable(kind, field)) return '';
  if (kind.fields[field]?.type === 'array') return [];
  return undefined;
}
