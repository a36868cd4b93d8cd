import { NORMALIZERS } from '../../kinds/normalizers.js';
import type { Body, KindDef, KindRuntimeConfig, ModuleDef, RefDef, ReconcileRules } from '../../kinds/types.js';
import { canonicalJson } from '../../util/canonical-json.js';
import { matchPaths, replaceHits } from '../paths.js';
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

/**
 * A value the rules rewrite: copied on the first rewrite that hits, then edited in place (a copy per
 * rule made normalising thousands of objects slow). Until then it may share parts with the input.
 */
class Rewrite {
  private owned = false;
  constructor(public v: unknown) {}

  map(pattern: string, fn: (v: unknown, path: string[]) => unknown) {
    const hits = matchPaths(this.v, pattern);
    if (!hits.length) return;
    if (!this.owned) {
      this.v = structuredClone(this.v);
      this.owned = true;
    }
    this.v = replaceHits(this.v, hits, fn); // the copy has the same paths
  }

  /** Sets `path`'s last key to `dflt` in every object its parent path reaches, where it is absent. */
  fill(path: string, dflt: unknown) {
    const segs = path.split('.');
    const last = segs.pop()!;
    const fill = (o: unknown) => (o && typeof o === 'object' && !Array.isArray(o) && !(last in o) ? { ...(o as Body), [last]: structuredClone(dflt) } : o);
    if (segs.length) this.map(segs.join('.'), fill);
    else this.v = fill(this.v); // a new top level; what it holds is still shared until a rule copies it
  }
}

function applyRules(r: Rewrite, rules: ReconcileRules | undefined) {
  for (const [path, dflt] of Object.entries(rules?.fill ?? {})) r.fill(path, dflt);
  for (const [path, name] of Object.entries(rules?.normalize ?? {})) r.map(path, NORMALIZERS[name]);
  for (const path of rules?.sets ?? []) r.map(path, asSet);
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

function symbolizeRefs(r: Rewrite, refs: RefDef[] | undefined, sym: Symbolize) {
  const one = (x: unknown) => (typeof x === 'string' ? sym(x) : x);
  for (const ref of refs ?? []) r.map(ref.field, (x) => (ref.many && Array.isArray(x) ? x.map(one) : one(x)));
}

/** Optional strings (description, metadata) read back absent when empty. */
function clearable(kind: KindDef, field: string): boolean {
  return kind.fields[field]?.type === 'string' && !kind.required?.includes(field);
}

export function normalizeModule(m: ModuleDef, given: Body, sym: Symbolize, config: KindRuntimeConfig = DEFAULT_CONFIG): Body {
  const own = m.normalize ? m.normalize(withoutNulls(given)) : withoutNulls(given);
  const v: Body = { ...(m.defaults ?? {}), ...(m.reconcile?.configDefaults?.(config) ?? {}), ...own };
  for (const d of m.derived ?? []) delete v[d];
  const r = new Rewrite(v);
  symbolizeRefs(r, m.refs, sym);
  applyRules(r, m.reconcile);
  return r.v as Body;
}

export function normalize(kind: KindDef, body: Body, sym: Symbolize, config: KindRuntimeConfig = DEFAULT_CONFIG): Normal {
  const fields = normalizeFields(kind, body, sym);
  const modules: Record<string, Body> = {};
  for (const m of kind.modules ?? []) {
    const v = body[m.name];
    if (v && typeof v === 'object') modules[m.name] = normalizeModule(m, v as Body, sym, config);
  }
  return { fields, modules };
}

/** The plain fields' part of the normal form (unique values and collision keys need no more). */
export function normalizeFields(kind: KindDef, body: Body, sym: Symbolize): Body {
  const fields: Body = {};
  for (const f of Object.keys(kind.fields)) {
    if (f === 'metadata' || kind.derived?.includes(f)) continue;
    const v = f in body ? body[f] : kind.defaults?.[f];
    if (v === undefined || v === null || (v === '' && clearable(kind, f))) continue;
    fields[f] = v;
  }
  const r = new Rewrite(fields);
  symbolizeRefs(r, kind.refs, sym);
  applyRules(r, kind.reconcile);
  return r.v as Body;
}

/** Whether two normal values are the same (secrets by fingerprint only). */
export function same(a: unknown, b: unknown): boolean {
  // Identical structure is the same value; only a difference needs the exact (slower) comparison,
  // which also decides the cases plain equality does not (a secret's fingerprint, absent keys).
  return identical(a, b) || canonicalJson(comparable(a)) === canonicalJson(comparable(b));
}

function identical(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!identical(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) if (!Object.hasOwn(b, k) || !identical((a as Body)[k], (b as Body)[k])) return false;
  return true;
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
