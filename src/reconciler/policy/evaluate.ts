import { findKind } from '../../kinds/registry.js';
import type { Body, KindDef } from '../../kinds/types.js';
import { SENSITIVE } from '../plan/changes.js';
import type { DesiredObject, ObservedObject } from '../plan/state.js';
import { isSecretToken } from '../plan/tokens.js';
import type { Plan, Step } from '../plan/types.js';
import { celValue, clearCompiled, type Compiled } from './cel.js';
import { BAIL, type ObjectSource } from './fast.js';
import { PairTable } from './pair-table.js';
import { didYouMean } from '../../util/suggest.js';
import { POLICY_KINDS } from './schema.js';
import type { ObjectAction, PlanPolicy, Policy, PolicyOutcome, PolicyOverride, PolicyResult, PolicyRule, PolicySet } from './types.js';

/** The most results a plan lists (the counts per policy are complete). */
export const RESULTS_MAX = 1_000;

/** References by identity, secrets masked: as the plan shows values. */
function token(v: object): unknown {
  if ('$secret' in v && isSecretToken(v)) return SENSITIVE;
  const ref = (v as { $ref?: unknown }).$ref;
  if (typeof ref === 'string' && onlyKey(v)) return ref; // isRefToken, without a list of keys
  return undefined;
}

/** What a rule reads (`object`, `live`, …): one activation, its fields set per object. */
export interface Activation {
  object: Record<string, unknown>;
  live: unknown;
  action: ObjectAction;
  changes: string[];
  plan: Record<string, Record<string, bigint>>;
}

/** An object as a rule reads it: kind, name and identity, and its fields as CEL values. */
export function objectView(kind: KindDef, name: string | undefined, identity: string | undefined, body: Body): Record<string, unknown> {
  const view = celValue(body, token) as Record<string, unknown>;
  const out = view === body ? { ...body } : view; // the body itself is never changed
  out.kind = kind.manifestKind;
  if (name !== undefined) out.name = name;
  if (identity !== undefined) out.identity = identity;
  return out;
}

/** Counts per action and kind, every manifest kind present (`plan.delete.HTTPSEdge` is 0, not missing). */
export function emptyCounts(): Record<string, Record<string, bigint>> {
  const out: Record<string, Record<string, bigint>> = {};
  for (const a of ['create', 'update', 'replace', 'delete']) out[a] = Object.fromEntries(POLICY_KINDS.map((k) => [k, 0n]));
  return out;
}

/**
 * The object a rule is evaluated on, for the verdicts kept per expression (`verdict`) and per
 * kind (`Group`): its top-level fields as rules read them, and its CEL view, made only when some
 * expression has no kept verdict for it. One is set again for each object (`reset`).
 */
export class Subject implements ObjectSource {
  private view?: Record<string, unknown>;
  kind!: KindDef;
  name: string | undefined;
  identity: string | undefined;
  body!: Body;
  /** In a group (`checkPlan`): the ids of its fields (by place), and each expression's fields' places among them. */
  ids: number[] = [];
  places?: Map<Compiled, number[]>;

  constructor(kind: KindDef, name: string | undefined, identity: string | undefined, body: Body) {
    this.reset(kind, name, identity, body);
  }

  reset(kind: KindDef, name: string | undefined, identity: string | undefined, body: Body): this {
    this.kind = kind;
    this.name = name;
    this.identity = identity;
    this.body = body;
    this.view = undefined;
    this.places = undefined;
    this.fieldCount = 0;
    return this;
  }

  /** The object as rules read it (`objectView`), made once. */
  object(): Record<string, unknown> {
    return (this.view ??= objectView(this.kind, this.name, this.identity, this.body));
  }

  /**
   * `object()[name]` when the view has it as its own field (else undefined), without making the
   * whole view: the field alone converted (`celValue`).
   */
  viewField(name: string): unknown {
    if (this.view) return Object.hasOwn(this.view, name) ? this.view[name] : undefined;
    if (name === 'kind') return this.kind.manifestKind;
    if (name === 'name' && this.name !== undefined) return this.name;
    if (name === 'identity' && this.identity !== undefined) return this.identity;
    // The fields converted so far (a rule reads one field more than once: has(object.a) && object.a.b).
    const names = this.fieldNames;
    for (let i = 0; i < this.fieldCount; i++) if (names[i] === name) return this.fieldValues[i];
    const v = Object.prototype.propertyIsEnumerable.call(this.body, name) ? this.body[name] : undefined; // as the view copies them
    const out = v === undefined ? undefined : celValue(v, token);
    names[this.fieldCount] = name;
    this.fieldValues[this.fieldCount++] = out;
    return out;
  }
  private fieldNames: string[] = [];
  private fieldValues: unknown[] = [];
  private fieldCount = 0;

  /** A top-level field as the view has it, before conversion (`kind`, `name`, `identity` as the view sets them). */
  field(field: string): unknown {
    return field === 'kind' ? this.kind.manifestKind : field === 'name' && this.name !== undefined ? this.name : field === 'identity' && this.identity !== undefined ? this.identity : this.body[field];
  }
}

/**
 * Values as numbers (`valueId`: equal CEL values, equal numbers), for the keys verdicts are kept
 * by. A primitive has an id of its own; a list or mapping is the id of a sequence of pairs
 * (`pairId`: the list so far, then an item; the mapping so far, then a key, then its value), so no
 * key string is built and an equal value made anew (the next plan's) finds the same id. Forgotten
 * all at once past `IDS_MAX`, with every kept verdict (their keys are ids).
 */
let primitiveIds = new Map<unknown, number>();
let nextId = 0;
const IDS_MAX = 500_000;
/** Ids that are never made (`nextId` starts at 0): an absent value, and the starts of sequences. */
const UNDEFINED_ID = -2;
const LIST = -3;
const MAPPING = -4;
const GROUP_KEY = -5;
/** A group's input past the ids `place` packs (a negative start, then its place, then its id): see `checkPlan`. */
const UNPACKED = -6;

/** The pairs (a, b) → id + 1. */
const pairs = new PairTable(1 << 14);

export function pairId(a: number, b: number): number {
  const i = pairs.slot(a, b);
  const v = pairs.valueAt(i);
  if (v !== 0) return v - 1;
  const id = nextId++;
  pairs.put(i, a, b, id + 1);
  return id;
}

export function valueId(v: unknown): number {
  return idOf(v);
}

/** At the start of a plan (never during one: its keys mix the ids it has made): forgets the ids past `IDS_MAX`. */
function startIds(): void {
  if (nextId < IDS_MAX) return;
  primitiveIds = new Map();
  pairs.clear();
  nextId = 0;
  forgetVerdicts();
}

function onlyKey(o: object): boolean {
  let n = 0;
  for (const _ in o) if (++n > 1) return false;
  return true;
}

/**
 * A primitive by itself; a reference or a secret as the string the view shows for it (the same CEL
 * value); a list by its items' ids in turn, a mapping by its keys' and values' ids in turn.
 */
function idOf(v: unknown): number {
  if (v === undefined) return UNDEFINED_ID;
  if (v === null || typeof v !== 'object') {
    let id = primitiveIds.get(v);
    if (id === undefined) primitiveIds.set(v, (id = nextId++));
    return id;
  }
  if (Array.isArray(v)) {
    let id = LIST;
    for (let i = 0; i < v.length; i++) id = pairId(id, idOf(v[i]));
    return id;
  }
  const o = v as Record<string, unknown>;
  if ('$secret' in o && isSecretToken(o)) return idOf(SENSITIVE);
  if (typeof o.$ref === 'string' && onlyKey(o)) return idOf(o.$ref); // isRefToken, without a list of keys
  let id = MAPPING;
  for (const k in o) id = pairId(pairId(id, idOf(k)), idOf(o[k]));
  return id;
}

/** The activation's parts other than the object, as value ids (`valueId`): made once per plan or per object. */
export interface ContextKeys { action: number; changes: number; plan: number }


/**
 * The policies of one kind whose every expression depends on few inputs (no selectors, no `live`,
 * `object` read by field): their verdicts on an object are kept together, by the union of those
 * inputs (`keptVerdict`, by the id of their ids in turn), so an object is looked up once for all of them.
 * The failures are kept by place (policy, rule), not as the rules of one load: messages and
 * severities come from the policies of the plan.
 */
interface Group {
  fields: string[];
  /** No field is one the view sets itself (`kind`, `name`, `identity`): each is read from the body. */
  plain: boolean;
  /** Each field's place in `fields`. */
  placeOf: Map<string, number>;
  /** Ids below it are packed with their place (`id * fields.length + place`: an int32). */
  packMax: number;
  extra: (keyof ContextKeys)[];
  /** Each expression's fields' places in `fields`. */
  places: Map<Compiled, number[]>;
  /** Its verdicts' owner in the verdict table (`keptVerdict`). */
  owner: number;
}
/** Per failing policy: its place in the kind's list and how many of its rules failed, then each one's place and error. */
type GroupVerdict = (number | string | undefined)[];
const GROUP_PASSED: GroupVerdict = Object.freeze([]) as unknown as GroupVerdict;
const GROUP_FOUND: GroupVerdict = [];

const groups = new Map<string, Group>();
const GROUPS_MAX = 200;

function groupOf(kind: string, policies: readonly Policy[]): Group | undefined {
  const exprs = (p: Policy) => [...(p.condition ? [p.condition] : []), ...p.rules.map((r) => r.compiled)];
  if (!policies.length || !policies.every((p) => !p.selectors && exprs(p).every((c) => c.inputs))) return undefined;
  const signature = `${kind}:${policies.map((p) => `${p.condition ? p.condition.serial : '-'}/${p.rules.map((r) => r.compiled.serial).join('.')}`).join('|')}`;
  let g = groups.get(signature);
  if (!g) {
    if (groups.size >= GROUPS_MAX) groups.clear();
    const all = policies.flatMap(exprs).map((c) => c.inputs!);
    const fields = [...new Set(all.flatMap((i) => i.fields))].sort();
    g = {
      fields,
      plain: !fields.some((f) => f === 'kind' || f === 'name' || f === 'identity'),
      placeOf: new Map(fields.map((f, i) => [f, i])),
      packMax: Math.floor(0x7fffffff / Math.max(1, fields.length)) - 1,
      extra: (['action', 'changes', 'plan'] as const).filter((x) => all.some((i) => i[x])),
      places: new Map(policies.flatMap(exprs).map((c) => [c, c.inputs!.fields.map((f) => fields.indexOf(f))])),
      owner: -1 - groupOwners++,
    };
    groups.set(signature, g);
  }
  return g;
}

/** Groups' owners in the verdict table: negative, apart from the expressions' serials. */
let groupOwners = 0;

/** Forgets every kept verdict and compiled expression: the next plan pays as a new process's first one does (benches). */
export function clearPolicyCaches(): void {
  clearCompiled();
  groups.clear();
  nextId = IDS_MAX;
  startIds();
}

/** A kept verdict that was an evaluation error (its summary). */
class Thrown { constructor(readonly summary: string) {} }

/**
 * The verdicts kept, by owner (an expression's `serial`, a group's `owner`) and input key: a
 * code, 1 for true (an expression) or passed (a group), 2 for false, else 3 + a place in
 * `keptValues` (an expression's other values, a group's failures: one list per distinct list).
 * Forgotten all at once past `VERDICTS_MAX`, and with the ids.
 */
const verdicts = new PairTable(1 << 14);
const VERDICTS_MAX = 200_000;
let keptValues: unknown[] = [];
/** A group's failures by the id of their items in turn: equal ones kept once. */
let keptFailures = new Map<number, number>();

function forgetVerdicts(): void {
  verdicts.clear();
  keptValues = [];
  keptFailures = new Map();
}

/** The kept verdict of `owner` for `key` (its code), 0 when there is none. */
function keptVerdict(owner: number, key: number): number {
  return verdicts.valueAt(verdicts.slot(owner, key));
}

/** Called before a verdict's code is made: past `VERDICTS_MAX`, every verdict is forgotten (codes with them). */
function roomForVerdict(): void {
  if (verdicts.size >= VERDICTS_MAX) forgetVerdicts();
}

function keepVerdict(owner: number, key: number, code: number): void {
  verdicts.put(verdicts.slot(owner, key), owner, key, code);
}

/** An expression's value as a code (`verdicts`). */
function valueCode(v: unknown): number {
  if (v === true) return 1;
  if (v === false) return 2;
  return keptValues.push(v) + 2;
}

/** A group's failures (`found` up to `end`) as a code: a list kept once per distinct content. */
function failuresCode(found: GroupVerdict, end: number): number {
  let id = LIST;
  for (let i = 0; i < end; i++) id = pairId(id, idOf(found[i]));
  let code = keptFailures.get(id);
  if (code === undefined) keptFailures.set(id, (code = keptValues.push(found.slice(0, end)) + 2));
  return code;
}

function codeValue(code: number): unknown {
  return code === 1 ? true : code === 2 ? false : keptValues[code - 3];
}

/**
 * What an expression gives on the activation: its value, or `Thrown`. When the expression depends
 * on few inputs (`Compiled.inputs`) and the subject is given, the verdict is kept by those inputs'
 * value ids and an equal input is not evaluated again (in one plan: routes alike; in a process
 * that plans again: every object whose read fields did not change). Otherwise evaluated on `ctx`.
 */
function verdict(c: Compiled, ctx: Activation, subject?: Subject, keys?: ContextKeys): unknown {
  const inputs = c.inputs;
  let key = -1;
  if (inputs && subject && keys) {
    // The id of its one input, or the id of its inputs' ids in turn (an expression's inputs are
    // always the same ones). The ids of the fields its group read already are not made again.
    const f = inputs.fields;
    const places = subject.places?.get(c);
    const ids = subject.ids;
    if (f.length === 1 && !inputs.action && !inputs.changes && !inputs.plan) key = places ? ids[places[0]] : idOf(subject.field(f[0]));
    else {
      key = UNDEFINED_ID;
      for (let i = 0; i < f.length; i++) key = pairId(key, places ? ids[places[i]] : idOf(subject.field(f[i])));
      if (inputs.action) key = pairId(key, keys.action);
      if (inputs.changes) key = pairId(key, keys.changes);
      if (inputs.plan) key = pairId(key, keys.plan);
    }
    const kept = keptVerdict(c.serial, key);
    if (kept !== 0) return codeValue(kept);
  }
  const v = evaluateOn(c, ctx, subject);
  if (inputs && subject && keys) {
    roomForVerdict();
    keepVerdict(c.serial, key, valueCode(v));
  }
  return v;
}

/** The library's verdict (`verdict` tried the closures first). */
function evaluateOn(c: Compiled, ctx: Activation, subject?: Subject): unknown {
  if (c.fast) {
    const v = c.fast(ctx as unknown as Record<string, unknown>, subject);
    if (v !== BAIL) return v;
  }
  if (subject) ctx.object = subject.object();
  try {
    return c.run(ctx);
  } catch (err) {
    return new Thrown((err as { summary?: string }).summary ?? (err as Error).message.split('\n')[0]);
  }
}

/**
 * One policy's verdict on one activation: the rules that failed (or could not be evaluated).
 * With `subject` (and `keys`), `ctx.object` is set from it when an expression is evaluated.
 */
const PASSED: { rule: PolicyRule; error?: string }[] = Object.freeze([]) as unknown as { rule: PolicyRule; error?: string }[];

export function failedRules(p: Policy, ctx: Activation, subject?: Subject, keys?: ContextKeys): { rule: PolicyRule; error?: string }[] {
  const found = FOUND;
  const end = ruleFailures(p, ctx, subject, keys, found, 0);
  if (!end) return PASSED;
  const out: { rule: PolicyRule; error?: string }[] = [];
  for (let j = 0; j < end; j += 2) {
    const rule = p.rules[found[j] as number];
    const error = found[j + 1] as string | undefined;
    out.push(error === undefined ? { rule } : { rule, error });
  }
  return out;
}

/** Scratch lists (written by place, never shortened: an array set shorter gives up its store). */
const FOUND: (number | string | undefined)[] = [];

/**
 * `failedRules` written into `out` from `at`: each failed rule's place in `rules`, then its error
 * (undefined when it gave false). Returns where the next entry goes.
 */
function ruleFailures(p: Policy, ctx: Activation, subject: Subject | undefined, keys: ContextKeys | undefined, out: (number | string | undefined)[], at: number): number {
  // A condition that cannot be read guards nothing: the rules are checked (fail closed).
  if (p.condition && verdict(p.condition, ctx, subject, keys) === false) return at;
  for (let i = 0; i < p.rules.length; i++) {
    const v = verdict(p.rules[i].compiled, ctx, subject, keys);
    if (v === true) continue;
    out[at++] = i;
    out[at++] = v === false ? undefined : v instanceof Thrown ? v.summary : `gave ${shortValue(v)}, not true or false`;
  }
  return at;
}

/** A value a rule gave instead of true or false, as its message shows it (bounded). */
function shortValue(v: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? Number(x) : x)) ?? String(v);
  } catch {
    text = String(v);
  }
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

/** Whether a policy of the object's kind applies to it (its selectors, when it has any). */
function selects(p: Policy, identity: string): boolean {
  return !p.selectors || p.selectors.some((s) => s.matches(identity));
}

interface Entry { action: ObjectAction; step?: string; liveId?: string; kind: string; changes: string[] }

const RANK: Record<ObjectAction, number> = { none: 0, update: 1, delete: 2, create: 3, replace: 4 };

/** What the plan does to each identity: its action, the step its results are shown with, the live object, the changed paths. */
function entries(plan: Plan): Map<string, Entry> {
  const out = new Map<string, Entry>();
  const note = (identity: string, kind: string, action: ObjectAction, step: string, liveId: string | undefined, paths: readonly string[]) => {
    let e = out.get(identity);
    if (!e) out.set(identity, (e = { action, step, kind, changes: [], ...(liveId ? { liveId } : {}) }));
    else if (RANK[action] > RANK[e.action]) e.action = action;
    if (!e.liveId && liveId) e.liveId = liveId;
    for (const p of paths) if (!e.changes.includes(p)) e.changes.push(p);
  };
  for (const s of plan.steps) {
    const action: ObjectAction = s.action === 'create' || s.action === 'replace' ? s.action : s.action === 'delete' ? 'delete' : 'update';
    // The delete of a replaced object is part of its replace; a duplicate's delete does not make the object deleted.
    if (s.action === 'delete' && s.id !== `${s.object.identity}:delete`) continue;
    note(s.object.identity, s.object.kind, action, s.id, s.object.id, s.changes.map((c) => c.path));
    for (const c of s.cascade ?? []) note(c.identity, c.kind, 'delete', s.id, c.id, []);
  }
  return out;
}

export interface PlanCheckInput {
  plan: Plan;
  desired: readonly DesiredObject[];
  observed: readonly ObservedObject[];
  overrides?: readonly PolicyOverride[];
}

const NO_CHANGES: string[] = Object.freeze([]) as unknown as string[];

/**
 * The stack's policies checked on a plan: each object the manifests hold (its action `none` when
 * the plan leaves it as it is), each object the plan deletes, and the plan as a whole for the
 * policies that read only `plan`. Sets each step's `policy` (the results about its object) and
 * returns the plan's (`Plan.policy`). A pure function of the plan and the objects.
 */
export function checkPlan(set: PolicySet, input: PlanCheckInput): PlanPolicy {
  const { plan } = input;
  startIds();
  const byIdentity = entries(plan);
  const counts = emptyCounts();
  // Per object the plan changes (a destroy's deletes of objects still in the manifests too).
  for (const e of byIdentity.values()) {
    const k = findKind(e.kind)?.manifestKind;
    if (k && e.action !== 'none') counts[e.action][k]++;
  }
  const perKind = new Map<string, Policy[]>();
  const whole: Policy[] = [];
  for (const p of set.policies) {
    if (p.planLevel) whole.push(p);
    else for (const k of POLICY_KINDS) if (!p.kinds || p.kinds.has(k)) perKind.set(k, [...(perKind.get(k) ?? []), p]);
  }
  const readsLive = set.policies.some((p) => p.condition?.readsLive || p.rules.some((r) => r.compiled.readsLive));
  let observedById: Map<string, ObservedObject> | undefined;
  const byId = () => (observedById ??= new Map(input.observed.map((o) => [o.id, o])));
  let observedByIdentity: Map<string, ObservedObject> | undefined;
  const byMarker = () => (observedByIdentity ??= new Map(input.observed.filter((o) => o.owner.type === 'this' && o.marker).map((o) => [o.marker!.id, o])));
  const liveView = (o: ObservedObject | undefined) => (o ? objectView(o.kind, undefined, o.marker?.id, o.body) : null);

  const results = new Results(set, input.overrides ?? []);
  const ctx: Activation = { object: {}, live: null, action: 'none', changes: NO_CHANGES, plan: counts };
  const record = (p: Policy, failed: { rule: PolicyRule; error?: string }[], identity?: string, action?: ObjectAction, step?: string) => {
    for (let i = 0; i < failed.length; i++) results.add(p, failed[i].rule, failed[i].error, identity, action, step);
  };
  const noneId = valueId('none');
  const noChangesId = valueId(NO_CHANGES);
  const keys: ContextKeys = { action: noneId, changes: noChangesId, plan: valueId(JSON.stringify(counts, (_, v) => (typeof v === 'bigint' ? Number(v) : v))) };
  for (const p of whole) record(p, failedRules(p, ctx));
  const groupByKind = new Map<string, Group | undefined>();
  for (const [k, ps] of perKind) groupByKind.set(k, groupOf(k, ps));
  const subject = new Subject(undefined as unknown as KindDef, undefined, undefined, {});
  const desired = input.desired;
  let lastKind: KindDef | undefined;
  let policies: Policy[] | undefined;
  let g: Group | undefined;
  for (let di = 0; di < desired.length; di++) {
    const d = desired[di];
    if (d.kind !== lastKind) {
      // Objects come kind by kind: looked up when the kind changes.
      lastKind = d.kind;
      policies = perKind.get(d.kind.manifestKind!);
      g = policies && groupByKind.get(d.kind.manifestKind!);
    }
    if (!policies) continue;
    const e = byIdentity.size ? byIdentity.get(d.identity) : undefined;
    subject.reset(d.kind, d.name, d.identity, d.body);
    const action = e?.action ?? 'none';
    const step = e?.step;
    ctx.action = action;
    ctx.changes = e?.changes ?? NO_CHANGES;
    keys.action = e ? valueId(e.action) : noneId;
    keys.changes = e?.changes.length ? valueId(e.changes) : noChangesId;
    ctx.live = null;
    if (g) {
      // The kept verdict's key: the group's inputs in turn, each a field's id and place packed in
      // one number (an absent field is left out), then `action`, `changes`, `plan` as it reads them.
      let key = GROUP_KEY;
      const fields = g.fields;
      const nf = fields.length;
      const ids = subject.ids;
      if (g.plain) {
        // The body's own fields in its order, each looked up among the group's (cheaper than
        // reading every field the group reads by name: most are absent). An object with its
        // fields in another order has another key: a verdict made again, never a wrong one.
        for (let i = 0; i < nf; i++) ids[i] = UNDEFINED_ID;
        const body = d.body;
        for (const f in body) {
          const i = g.placeOf.get(f);
          if (i === undefined) continue;
          const fv = body[f];
          if (fv === undefined) continue;
          const id = (ids[i] = idOf(fv));
          key = id < g.packMax ? pairId(key, id * nf + i) : pairId(pairId(pairId(key, UNPACKED), i), id);
        }
      } else {
        for (let i = 0; i < nf; i++) {
          const fv = subject.field(fields[i]);
          if (fv === undefined) {
            ids[i] = UNDEFINED_ID;
            continue;
          }
          const id = (ids[i] = idOf(fv));
          key = id < g.packMax ? pairId(key, id * nf + i) : pairId(pairId(pairId(key, UNPACKED), i), id);
        }
      }
      for (let i = 0; i < g.extra.length; i++) key = pairId(key, keys[g.extra[i]]);
      const code = keptVerdict(g.owner, key);
      let v: GroupVerdict;
      if (code !== 0) v = code === 1 ? GROUP_PASSED : (keptValues[code - 3] as GroupVerdict);
      else {
        subject.places = g.places;
        const found = GROUP_FOUND;
        let end = 0;
        for (let i = 0; i < policies.length; i++) {
          const next = ruleFailures(policies[i], ctx, subject, keys, found, end + 2);
          if (next === end + 2) continue;
          found[end] = i;
          found[end + 1] = (next - end - 2) / 2;
          end = next;
        }
        roomForVerdict();
        const made = end ? failuresCode(found, end) : 1;
        v = made === 1 ? GROUP_PASSED : (keptValues[made - 3] as GroupVerdict);
        keepVerdict(g.owner, key, made);
      }
      for (let i = 0; i < v.length; ) {
        const p = policies[v[i] as number];
        const end = i + 2 + 2 * (v[i + 1] as number);
        for (let j = i + 2; j < end; j += 2) results.add(p, p.rules[v[j] as number], v[j + 1] as string | undefined, d.identity, action, step);
        i = end;
      }
      continue;
    }
    if (readsLive) ctx.live = liveView(e?.liveId ? byId().get(e.liveId) : byMarker().get(d.identity));
    for (const p of policies) {
      if (p.selectors && !selects(p, d.identity)) continue;
      record(p, failedRules(p, ctx, subject, keys), d.identity, action, step);
    }
  }
  let desiredIds: Set<string> | undefined;
  for (const [identity, e] of byIdentity) {
    if (e.action !== 'delete') continue;
    if (!desiredIds) {
      desiredIds = new Set<string>();
      for (const d of input.desired) desiredIds.add(d.identity);
    }
    if (desiredIds.has(identity)) continue;
    const kind = findKind(e.kind);
    const o = e.liveId ? byId().get(e.liveId) : undefined;
    if (!kind?.manifestKind || !o) continue;
    const policies = perKind.get(kind.manifestKind);
    if (!policies) continue;
    subject.reset(kind, identity.slice(identity.lastIndexOf('/') + 1), identity, o.body);
    const view = subject.object();
    Object.assign(ctx, { object: view, live: view, action: 'delete', changes: NO_CHANGES });
    Object.assign(keys, { action: valueId('delete'), changes: valueId(NO_CHANGES) });
    for (const p of policies) if (selects(p, identity)) record(p, failedRules(p, ctx, subject, keys), identity, 'delete', e.step);
  }
  return results.summary(plan.steps);
}

/**
 * The failures as they are found: counted per policy (complete), kept in three lists — denials,
 * overridden denials, warnings — each in the order found, up to `RESULTS_MAX` (a plan where a
 * policy fails on thousands of unchanged objects makes no object for each), and every failure
 * about a step's object kept for that step.
 */
class Results {
  private readonly reason: Map<string, string>;
  private readonly outcomes = new Map<string, PolicyOutcome>();
  private readonly ranked: PolicyResult[][] = [[], [], []];
  private readonly ofSteps: PolicyResult[] = [];
  private omitted = 0;

  constructor(private readonly set: PolicySet, overrides: readonly PolicyOverride[]) {
    this.reason = new Map(overrides.map((o) => [o.policy, o.reason]));
  }

  private lastPolicy?: Policy;
  private lastOutcome?: PolicyOutcome;

  /** A failed rule, about an object (`identity`, `action`, its `step` when it has one) or the plan. */
  add(p: Policy, rule: PolicyRule, error: string | undefined, identity?: string, action?: ObjectAction, step?: string): void {
    let o = p === this.lastPolicy ? this.lastOutcome : this.outcomes.get(p.name);
    if (!o) this.outcomes.set(p.name, (o = { policy: p.name, denied: 0, warned: 0, overridable: p.overridable }));
    this.lastPolicy = p;
    this.lastOutcome = o;
    const deny = rule.severity === 'deny';
    if (deny) o.denied++;
    else o.warned++;
    const overridden = p.overridable && this.reason.size > 0 && this.reason.has(p.name);
    if (overridden) o.override ??= { reason: this.reason.get(p.name)! };
    const list = this.ranked[deny ? (overridden ? 1 : 0) : 2];
    if (list.length >= RESULTS_MAX && !step) {
      this.omitted++;
      return;
    }
    // Made in the order its fields are shown (JSON), without an object per optional part; the
    // usual shapes as one literal each (a field added later goes to a store of its own).
    const r: PolicyResult = identity === undefined
      ? { policy: p.name, rule: rule.index, severity: rule.severity, message: rule.message }
      : step
        ? { policy: p.name, rule: rule.index, severity: rule.severity, message: rule.message, identity, action, step }
        : { policy: p.name, rule: rule.index, severity: rule.severity, message: rule.message, identity, action };
    if (error !== undefined) r.error = error;
    if (overridden) r.overridden = true;
    if (step) this.ofSteps.push(r);
    if (list.length < RESULTS_MAX) list.push(r);
    else this.omitted++;
  }

  /** The plan's policy; each step is given its own results (denials first). */
  summary(steps: Step[]): PlanPolicy {
    if (this.ofSteps.length) {
      const stepById = new Map(steps.map((s) => [s.id, s]));
      const rank = (r: PolicyResult) => (r.severity === 'deny' ? (r.overridden ? 1 : 0) : 2);
      for (const want of [0, 1, 2]) {
        for (const r of this.ofSteps) {
          if (rank(r) !== want) continue;
          const s = stepById.get(r.step!);
          if (!s) continue;
          const { identity: _i, step: _s, ...own } = r;
          (s.policy ??= []).push(own);
        }
      }
    }
    const results: PolicyResult[] = [];
    let found = 0;
    for (const list of this.ranked) {
      found += list.length;
      for (let i = 0; i < list.length && results.length < RESULTS_MAX; i++) results.push(list[i]);
    }
    const orank = (o: PolicyOutcome) => (o.denied ? (o.override ? 1 : 0) : 2);
    const out: PlanPolicy = {
      checked: this.set.policies.map((p) => p.name),
      outcomes: [...this.outcomes.values()].sort((a, b) => orank(a) - orank(b) || a.policy.localeCompare(b.policy)),
      results,
    };
    const omitted = this.omitted + Math.max(0, found - RESULTS_MAX);
    if (omitted) out.omitted = omitted;
    return out;
  }
}

/** The policies that stop a plan: denials not overridden. */
export function denyingPolicies(policy: PlanPolicy | undefined, overrides: readonly string[] = []): PolicyOutcome[] {
  return (policy?.outcomes ?? []).filter((o) => o.denied > 0 && !o.override && !(o.overridable && overrides.includes(o.policy)));
}

/**
 * Overrides given when a saved plan is applied (`apply --plan FILE --override-policy NAME`): the
 * plan's outcomes and results marked as `checkPlan` marks them. Returns the plan's policy anew
 * (the saved plan is not changed).
 */
export function withOverrides(policy: PlanPolicy, overrides: readonly PolicyOverride[]): PlanPolicy {
  if (!overrides.length) return policy;
  const reason = new Map(overrides.map((o) => [o.policy, o.reason]));
  const mark = (name: string, overridable: boolean) => overridable && reason.has(name);
  const overridable = new Map(policy.outcomes.map((o) => [o.policy, o.overridable]));
  return {
    ...policy,
    outcomes: policy.outcomes.map((o) => (mark(o.policy, o.overridable) && !o.override ? { ...o, override: { reason: reason.get(o.policy)! } } : o)),
    results: policy.results.map((r) => (mark(r.policy, overridable.get(r.policy) ?? false) && !r.overridden ? { ...r, overridden: true as const } : r)),
  };
}

/**
 * `--override-policy` names checked against the policies: each must be one (did-you-mean), and
 * one that may be overridden. The messages, empty when all are fine.
 */
export function overrideProblems(names: readonly string[], policies: readonly { name: string; overridable: boolean }[]): string[] {
  const out: string[] = [];
  for (const n of names) {
    const p = policies.find((x) => x.name === n);
    if (!p) out.push(`--override-policy ${n}: no such policy${didYouMean(n, policies.map((x) => x.name))}${policies.length ? ` (the stack's policies: ${policies.map((x) => x.name).slice(0, 20).join(', ')})` : ' (the stack has none)'}`);
    else if (!p.overridable) out.push(`--override-policy ${n}: this policy says it cannot be overridden (overridable: false); change the manifests instead`);
  }
  return out;
}
