import { NORMALIZERS } from '../../kinds/normalizers.js';
import { clearable } from '../../kinds/fields.js';
import type { Body, KindDef, KindRuntimeConfig, ModuleDef, RefDef, ReconcileRules } from '../../kinds/types.js';
import { canonicalJson } from '../../util/canonical-json.js';
import { setOwn } from '../../util/own.js';
import { Scratch } from '../../util/scratch.js';
import { matchPaths, plainPath } from '../paths.js';
import { isRefToken, isSecretToken, type RefToken } from './tokens.js';

/** Maps a raw id to the identity of the managed object it names (or leaves it as is). */
export type Symbolize = (id: string) => string | RefToken;

/**
 * Reads ids through `identities` (id → the identity of the managed object it is): a known id as a
 * reference token, any other as itself. One token per identity, made when first read: only the
 * objects something refers to get one, and references to the same object share it.
 */
export function tokenReader(identities: Pick<ReadonlyMap<string, string>, 'get'>): Symbolize {
  const tokens = new Map<string, RefToken>();
  return (id) => {
    const identity = identities.get(id);
    if (identity === undefined) return id;
    let t = tokens.get(identity);
    if (!t) tokens.set(identity, (t = { $ref: identity }));
    return t;
  };
}

/** The deployment settings some defaults depend on (the service's vendor prefix). */
export const DEFAULT_CONFIG: KindRuntimeConfig = { vendorPrefix: 'service' };

/**
 * The comparable form of a body, from the rules declared with each kind and module: defaults filled
 * in, derived fields dropped, references as identities, sets sorted, named normalisers applied,
 * optional strings cleared to absent. Used on both sides of the diff, and by export.
 */
export interface Normal { fields: Body; modules: Record<string, Body> }

/**
 * A value the rules rewrite, copy-on-write along the paths a rule changes: a container is copied
 * (shallowly) the first time a change reaches into it, and a rule whose result is the value it was
 * given changes nothing. Everything no rule touched stays shared with the input, so normalising
 * thousands of bodies that are already in normal form allocates almost nothing.
 */
class Rewrite {
  v: unknown;
  private ownedRoot = false;
  /** The copies made so far (few: one per container a rule changes). */
  private readonly owned = new Scratch<object>();

  /**
   * One rewrite, of `v` (already a copy of its own when `ownedRoot`). Rewrites do not nest (no
   * rule normalises a body), so one instance serves them all: `done` ends each.
   */
  static of(v: unknown, ownedRoot: boolean): Rewrite {
    const r = REWRITE;
    r.v = v;
    r.ownedRoot = ownedRoot;
    return r;
  }

  /** The rewritten value; the instance lets go of it and of its copies. */
  done(): unknown {
    const v = this.v;
    this.v = undefined;
    this.owned.clear();
    return v;
  }

  map(pattern: string, fn: (v: unknown) => unknown) {
    const plain = plainPath(pattern);
    if (plain) {
      // Most rules name one field: found by walking, with no list of hits made.
      let v = this.v;
      for (let i = 0; i < plain.length; i++) {
        if (!isObject(v) || !(plain[i] in v)) return;
        v = v[plain[i]];
      }
      if (v === undefined) return;
      const next = fn(v);
      if (next !== v) this.set(plain, next);
      return;
    }
    for (const h of matchPaths(this.v, pattern)) {
      const next = fn(h.value);
      if (next !== h.value) this.set(h.path, next);
    }
  }

  /** Sets `path`'s last key to `dflt` in every object its parent path reaches, where it is absent. */
  fill(path: string, dflt: unknown) {
    const cut = path.lastIndexOf('.');
    const last = path.slice(cut + 1);
    if (cut < 0) {
      if (isObject(this.v) && !(last in this.v)) this.set([last], structuredClone(dflt));
      return;
    }
    for (const h of matchPaths(this.v, path.slice(0, cut))) {
      if (isObject(h.value) && !(last in h.value)) this.set([...h.path, last], structuredClone(dflt));
    }
  }

  private own<T extends object>(c: T): T {
    if (this.ownedRoot && c === this.v) return c;
    if (this.owned.includes(c)) return c;
    const copy = copyOf(c);
    this.owned.push(copy);
    return copy;
  }

  private set(path: string[], value: unknown) {
    let holder = (this.v = this.own(this.v as object)) as Record<string, unknown>;
    for (let i = 0; i < path.length - 1; i++) {
      const child = this.own(holder[path[i]] as object);
      holder[path[i]] = child;
      holder = child as Record<string, unknown>;
    }
    const last = path[path.length - 1];
    if (value === undefined) delete holder[last];
    else holder[last] = value;
  }
}

const REWRITE = new Rewrite();

/**
 * Copies `from`'s keys into `to` (as a spread would; `skip` left out), one assignment at a time.
 * Objects that are modified after copying are built this way, not spread or `delete`d from: V8
 * gives a spread copy a one-off hidden class, and every later change of a value's type (an id
 * replaced by a reference) then makes another one per object; a `delete` turns an object into a
 * slow hash map. Built by assignment, all objects of a shape share one class.
 */
function assign(to: Record<string, unknown>, from: object | undefined, skip?: string[]): Record<string, unknown> {
  for (const k in from) if (!skip?.includes(k)) setOwn(to, k, (from as Record<string, unknown>)[k]);
  return to;
}

function hasKeys(v: Body, keys: object | undefined): boolean {
  for (const k in keys) if (!(k in v)) return false;
  return true;
}

/** A shallow copy by assignment (see `assign`). */
export function copyOf<T extends object>(c: T): T {
  return (Array.isArray(c) ? c.slice() : assign({}, c)) as T;
}

/** The containers copied so far for one body (an array, or a `Scratch` reused for body after body). */
export interface Copies { includes(c: object): boolean; push(c: object): unknown }

/**
 * Sets a value at a path of `body` (a copy of a body's top level), copying each container on the
 * way the first time it is written into (`copied` lists those copies): the body it was copied from
 * is never modified, and what no write reaches stays shared with it.
 */
export function setAt(body: Body, path: (string | number)[], value: unknown, copied: Copies) {
  let holder = body as Record<string | number, unknown>;
  for (let i = 0; i < path.length - 1; i++) {
    let child = holder[path[i]] as Record<string | number, unknown>;
    if (!copied.includes(child)) {
      child = copyOf(child);
      copied.push(child);
      holder[path[i]] = child;
    }
    holder = child;
  }
  holder[path[path.length - 1]] = value;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function applyRules(r: Rewrite, rules: ReconcileRules | undefined) {
  if (!rules) return;
  if (rules.fill) for (const path in rules.fill) r.fill(path, rules.fill[path]);
  if (rules.normalize) for (const path in rules.normalize) r.map(path, NORMALIZERS[rules.normalize[path]]);
  if (rules.sets) for (const path of rules.sets) r.map(path, asSet);
}

/** `null` is how clients say "the default": drop it so the default applies. */
function withoutNulls(b: Body): Body {
  for (const k in b) if (b[k] === null) return Object.fromEntries(Object.entries(b).filter(([, x]) => x !== null));
  return b;
}

/** Order ignored, duplicates dropped: sorted by canonical JSON. An array already so is returned as is. */
function asSet(v: unknown): unknown {
  if (!Array.isArray(v)) return v;
  if (inJsonOrder(v)) return v;
  const keys = v.map((x) => (typeof x === 'string' ? JSON.stringify(x) : canonicalJson(x)));
  let ordered = true;
  for (let i = 1; i < keys.length && ordered; i++) ordered = keys[i - 1] < keys[i];
  if (ordered) return v;
  const seen = new Map<string, unknown>();
  keys.forEach((k, i) => seen.set(k, v[i]));
  return [...seen.keys()].sort().map((k) => seen.get(k));
}

/** Characters JSON escapes (and lone surrogates): a string with none encodes as itself in quotes. */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * Whether a list is already strictly in the order of its elements' JSON encodings — the common
 * case (hostports, ids, references), decided without encoding anything. Plain strings and
 * references (`{"$ref": …}`) are compared by their text: a string's encoding starts with `"`, which
 * sorts before a reference's `{`, and `"a"` sorts against `"ab"` as the closing quote against `b`
 * (a reference's text is followed by a quote too). False when unsure (other values, escapes): the
 * caller encodes.
 */
export function inJsonOrder(v: unknown[]): boolean {
  let prevRef = false;
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    const ref = typeof x !== 'string';
    const text = ref ? plainRef(x) : x;
    if (text === undefined || ESCAPED.test(text)) return false;
    if (i > 0 && (prevRef === ref ? !quotedLess((ref ? (v[i - 1] as RefToken).$ref : v[i - 1]) as string, text) : prevRef)) return false;
    prevRef = ref;
  }
  return true;
}

/** A reference token's target, when the value is exactly `{"$ref": <string>}`. */
function plainRef(x: unknown): string | undefined {
  if (!x || typeof x !== 'object' || Array.isArray(x)) return undefined;
  let target: string | undefined;
  for (const k in x) {
    if (k !== '$ref' || typeof (x as RefToken).$ref !== 'string') return undefined;
    target = (x as RefToken).$ref;
  }
  return target;
}

function quotedLess(a: string, b: string): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i), y = b.charCodeAt(i);
    if (x !== y) return x < y;
  }
  if (a.length === b.length) return false;
  return a.length < b.length ? 0x22 < b.charCodeAt(n) : a.charCodeAt(n) < 0x22;
}

/** The symbolizer of the `symbolizeRefs` call under way: the mappers below read it (no closure per call). */
let reading: Symbolize = (id) => id;

function symbolizeRefs(r: Rewrite, refs: RefDef[] | undefined, sym: Symbolize) {
  if (!refs) return;
  reading = sym;
  for (const ref of refs) r.map(ref.field, ref.many ? symbolizeMany : symbolizeOne);
}

function symbolizeOne(x: unknown): unknown {
  return typeof x === 'string' ? reading(x) : x;
}

function symbolizeMany(x: unknown): unknown {
  return Array.isArray(x) ? symbolizeAll(x) : symbolizeOne(x);
}

function symbolizeAll(list: unknown[]): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < list.length; i++) {
    const next = symbolizeOne(list[i]);
    if (next !== list[i]) (out ??= [...list])[i] = next;
  }
  return out ?? list;
}

const configDefaultsCache = new WeakMap<KindRuntimeConfig, Map<ModuleDef, Body | undefined>>();
function configDefaults(m: ModuleDef, config: KindRuntimeConfig): Body | undefined {
  if (!m.reconcile?.configDefaults) return undefined;
  let byModule = configDefaultsCache.get(config);
  if (!byModule) configDefaultsCache.set(config, (byModule = new Map()));
  if (!byModule.has(m)) byModule.set(m, m.reconcile.configDefaults(config));
  return byModule.get(m);
}

export function normalizeModule(m: ModuleDef, given: Body, sym: Symbolize, config: KindRuntimeConfig = DEFAULT_CONFIG): Body {
  const own = m.normalize ? m.normalize(withoutNulls(given)) : withoutNulls(given);
  const cd = configDefaults(m, config);
  // A module as the service returns it has every default and no derived field: it is used as it
  // is (rules copy on write), not copied.
  const complete = hasKeys(own, m.defaults) && hasKeys(own, cd) && !m.derived?.some((d) => d in own);
  let v = own;
  if (!complete) {
    v = {};
    assign(v, m.defaults);
    assign(v, cd);
    assign(v, own, m.derived);
  }
  const r = Rewrite.of(v, !complete);
  symbolizeRefs(r, m.refs, sym);
  applyRules(r, m.reconcile);
  return r.done() as Body;
}

export function normalize(kind: KindDef, body: Body, sym: Symbolize, config: KindRuntimeConfig = DEFAULT_CONFIG): Normal {
  const fields = normalizeFields(kind, body, sym);
  return { fields, modules: normalizeModules(kind, body, sym, config) };
}

/** No modules configured: shared (frozen), as most bodies of most kinds have none. */
const NO_MODULES: Record<string, Body> = Object.freeze({}) as Record<string, Body>;

function normalizeModules(kind: KindDef, body: Body, sym: Symbolize, config: KindRuntimeConfig): Record<string, Body> {
  let modules = NO_MODULES;
  const defs = kind.modules;
  if (!defs) return modules;
  for (let i = 0; i < defs.length; i++) {
    const m = defs[i];
    const v = body[m.name];
    if (v && typeof v === 'object') {
      if (modules === NO_MODULES) modules = {};
      modules[m.name] = normalizeModule(m, v as Body, sym, config);
    }
  }
  return modules;
}

/** A kind's plain fields as normal forms take them: metadata and derived fields left out (worked out once per kind). */
interface PlainField { name: string; dflt: unknown; clearable: boolean }
const plainFields = new WeakMap<KindDef, PlainField[]>();
function plainFieldsOf(kind: KindDef): PlainField[] {
  let plan = plainFields.get(kind);
  if (!plan) {
    plan = [];
    for (const f in kind.fields) {
      if (f === 'metadata' || kind.derived?.includes(f)) continue;
      plan.push({ name: f, dflt: kind.defaults?.[f], clearable: clearable(kind, f) });
    }
    plainFields.set(kind, plan);
  }
  return plan;
}

/** The plain fields' part of the normal form (unique values and collision keys need no more). */
export function normalizeFields(kind: KindDef, body: Body, sym: Symbolize): Body {
  const fields: Body = {};
  const plan = plainFieldsOf(kind);
  for (let i = 0; i < plan.length; i++) {
    const p = plan[i];
    const v = p.name in body ? body[p.name] : p.dflt;
    if (v === undefined || v === null || (v === '' && p.clearable)) continue;
    fields[p.name] = v;
  }
  const r = Rewrite.of(fields, true);
  symbolizeRefs(r, kind.refs, sym);
  applyRules(r, kind.reconcile);
  return r.done() as Body;
}

/** Whether two normal values are the same (secrets by fingerprint only). */
export function same(a: unknown, b: unknown): boolean {
  // Identical structure is the same value; only a difference needs the exact (slower) comparison,
  // which also decides the cases plain equality does not (a secret's fingerprint, absent keys).
  return identical(a, b) || canonicalJson(comparable(a)) === canonicalJson(comparable(b));
}

/** Structural equality of JSON values (key order ignored). */
export function identical(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!identical(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  // Plain JSON objects (no prototypes with enumerable keys): for…in needs no key arrays.
  let n = 0;
  for (const k in a) {
    if (!Object.hasOwn(b, k) || !identical((a as Body)[k], (b as Body)[k])) return false;
    n++;
  }
  for (const _ in b) if (--n < 0) return false;
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

/**
 * Normal forms kept from one plan to the next (a watch session plans the same thousands of
 * bodies again after every save). Normalising is a pure function of the body, the config and the
 * ids it looked up, so each entry records those look-ups and is used only while every one of them
 * still reads the same. Bodies are never modified once built, so the body object is the key.
 */
export class NormMemo {
  private readonly normal: MapLike<Body, Entry>;
  private readonly raw: MapLike<Body, Body>;

  /**
   * `session` (watch): entries live as long as their bodies (weakly held). `plan`: the memo is
   * dropped with its one plan, so plain maps do (a WeakMap costs more per entry, and a plan makes
   * thousands).
   */
  constructor(lifetime: 'session' | 'plan' = 'session') {
    this.normal = lifetime === 'plan' ? new Map() : new WeakMap();
    this.raw = lifetime === 'plan' ? new Map() : new WeakMap();
  }

  /**
   * Compares a desired body with an observed one ahead of the plan, from their normal forms in
   * this memo (computed with the look-ups known so far), and remembers the pair when they are the
   * same. Planning pages while they arrive does this as each object comes, so that once the last
   * page is in, most objects are settled by `settled` instead of by a comparison. `wantForm`: what
   * `normalForm` answered for `want`, when the caller kept it (no look-up; `settled` checks its
   * look-ups again whatever it is).
   */
  settleAhead(want: Body, have: Body, config: KindRuntimeConfig, wantForm?: Normal): Settlement | undefined {
    const a = (wantForm as Entry | undefined) ?? this.normal.get(want);
    // Planning settles each observed body right after normalising it: its entry is at hand.
    const b = have === this.lastBody ? this.lastEntry : this.normal.get(have);
    if (a && b && a.config === config && b.config === config && identical(a.fields, b.fields) && identical(a.modules, b.modules)) {
      b.sameAs = want;
      b.sameEntry = a;
      // The observed side's own copies are let go while they are young (a plan holds tens of
      // thousands, and the young generation copies every one that survives). `settled` needs only
      // the pair; a later `normalForm` of this body makes them again (the same values, perhaps
      // with keys in another order, which a plan's `before` shows).
      b.fields = a.fields;
      b.modules = a.modules;
      b.borrowed = true;
      return b as object as Settlement;
    }
    return undefined;
  }

  /**
   * Whether the normal forms of `want` and `have`, read with `sym`, are the same, known from
   * `settleAhead`: the pair was found the same and every id either normal form looked up still
   * reads the same (normalising is a pure function of the body, the config and those look-ups, so
   * the forms compared then are the forms now). False means "not known": compare them.
   */
  settled(want: Body, have: Body, sym: Symbolize, config: KindRuntimeConfig): boolean {
    const b = this.normal.get(have);
    return !!b && this.stillSettled(b as object as Settlement, want, sym, config);
  }

  /** `settled`, of the body `settleAhead` answered with `s` (the caller kept it: no look-up). */
  stillSettled(s: Settlement, want: Body, sym: Symbolize, config: KindRuntimeConfig): boolean {
    const b = s as object as Entry;
    const a = b.sameEntry;
    return !!a && b.sameAs === want && a.config === config && stillReads(a.lookups, sym) && stillReads(b.lookups, sym);
  }

  normalForm(kind: KindDef, body: Body, sym: Symbolize, config: KindRuntimeConfig): Normal {
    const hit = this.normal.get(body);
    if (hit && !hit.borrowed && hit.config === config && stillReads(hit.lookups, sym)) return this.remember(body, hit);
    const entry = this.make(kind, body, sym, config);
    this.normal.set(body, entry);
    return this.remember(body, entry);
  }

  /**
   * The normal form of a body nothing has asked for yet, for `settleAhead` (a live object as its
   * page arrives): made with no look-up, and kept only when `keep` says so (most are settled
   * ahead and never asked for again).
   */
  freshForm(kind: KindDef, body: Body, sym: Symbolize, config: KindRuntimeConfig): Normal {
    return this.remember(body, this.make(kind, body, sym, config));
  }

  /** Keeps the normal form `freshForm` just made of `body`, for the plan to ask for. */
  keep(body: Body): void {
    if (body === this.lastBody && this.lastEntry) this.normal.set(body, this.lastEntry);
  }

  private make(kind: KindDef, body: Body, sym: Symbolize, config: KindRuntimeConfig): Entry {
    this.reading = sym;
    this.lookups.clear();
    const fields = normalizeFields(kind, body, this.recorder);
    const modules = normalizeModules(kind, body, this.recorder, config);
    // Kept at their exact length (most bodies look up one id or none); the scratch list is reused.
    const lookups = this.lookups.length === 2 ? this.oneLookup() : this.lookups.take(undefined);
    // One object per body: the normal form and what it was made with (thousands are kept).
    return { fields, modules, config, lookups, sameAs: undefined, sameEntry: undefined, borrowed: false };
  }

  /** The body `normalForm` answered last, and its entry. */
  private lastBody: Body | undefined;
  private lastEntry: Entry | undefined;

  private remember(body: Body, entry: Entry): Entry {
    this.lastBody = body;
    this.lastEntry = entry;
    return entry;
  }

  private reading: Symbolize = (x) => x;
  private readonly lookups = new Scratch<string | RefToken>();
  /** Look-up lists of one id (most bodies that look up any), shared by every body that made the same look-up. */
  private readonly single = new Map<string, Lookups>();

  /** The one look-up in `lookups` as a shared list (lists are never modified). */
  private oneLookup(): Lookups {
    const id = this.lookups.get(0) as string;
    const r = this.lookups.get(1);
    this.lookups.clear();
    let known = this.single.get(id);
    if (!known || known[1] !== r) this.single.set(id, (known = [id, r]));
    return known;
  }
  /** Reads ids through the current symbolizer and notes each look-up (one function for every call). */
  private readonly recorder: Symbolize = (id) => {
    const r = this.reading(id);
    this.lookups.push(id);
    this.lookups.push(r);
    return r;
  };

  /** The plain fields with ids as they are (no look-ups: always valid). */
  rawFields(kind: KindDef, body: Body): Body {
    let f = this.raw.get(body);
    if (!f) this.raw.set(body, (f = normalizeFields(kind, body, asItIs)));
    return f;
  }
}

const asItIs: Symbolize = (id) => id;

declare const settlement: unique symbol;
/** A live body `settleAhead` found the same as a desired one (opaque: read back by `stillSettled`). */
export interface Settlement { readonly [settlement]: true }

/** Look-ups a normal form made: id, what it read as, id, what it read as, … */
type Lookups = (string | RefToken)[];

/**
 * A normal form as the memo keeps it (callers read it as a `Normal`), with the config and look-ups
 * it was made with, and, for an observed body found the same as a desired one ahead of the plan
 * (`settleAhead`), that desired body and its entry then.
 */
interface Entry extends Normal {
  config: KindRuntimeConfig;
  lookups: Lookups | undefined;
  sameAs: Body | undefined;
  sameEntry: Entry | undefined;
  /** Settled ahead: `fields` and `modules` are the desired entry's (`settleAhead`), not this body's own. */
  borrowed: boolean;
}

interface MapLike<K, V> { get(k: K): V | undefined; set(k: K, v: V): unknown }

function stillReads(lookups: Lookups | undefined, sym: Symbolize): boolean {
  if (!lookups) return true;
  for (let i = 0; i < lookups.length; i += 2) {
    const was = lookups[i + 1];
    const now = sym(lookups[i] as string);
    if (typeof now === 'string' ? now !== was : typeof was === 'string' || now.$ref !== was.$ref) return false;
  }
  return true;
}
