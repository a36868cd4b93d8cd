import { findKind } from '../../kinds/registry.js';
import type { Risk } from '../../kinds/types.js';
import type { Action, Change, Plan, Step } from '../plan/types.js';
import { countOf, sliceChars, visible } from './values.js';

/**
 * The order in which a plan is shown to a reviewer: what can break traffic or security first.
 * Every renderer reads it here; what is risky is each kind's description (`risk` of a field or
 * module, `src/kinds/`), never a list of kinds.
 */

export const DESTRUCTIVE: ReadonlySet<Action> = new Set(['delete', 'replace', 'module.delete']);

const riskCache = new Map<string, Map<string, Risk>>();

/** The fields and modules of a kind that declare a risk, by name. */
function risks(kind: string): Map<string, Risk> {
  let r = riskCache.get(kind);
  if (!r) {
    const k = findKind(kind);
    r = new Map(Object.entries(k?.risk ?? {}));
    for (const m of k?.modules ?? []) if (m.risk) r.set(m.name, m.risk);
    riskCache.set(kind, r);
  }
  return r;
}

/** What a change of `path` (`hostports`, `oidc.issuer`) on an object of `kind` can break, if anything. */
export function changeRisk(kind: string, path: string): Risk | undefined {
  const dot = path.indexOf('.');
  return risks(kind).get(dot < 0 ? path : path.slice(0, dot));
}

/** What a step can break: its module's risk, or that of any field it changes. */
export function stepRisk(s: Step): Risk | undefined {
  const r = risks(s.object.kind);
  if (s.module && r.has(s.module)) return r.get(s.module);
  for (const c of s.changes) {
    const x = changeRisk(s.object.kind, c.path);
    if (x) return x;
  }
  return undefined;
}

/**
 * A plan's objects (each with all its steps, in plan order) by risk: destructive (every step of an
 * object with a delete, a replacement or a module removed: a swap reads whole), then updates
 * that touch a field or module declaring a risk (hostports, auth, TLS, backends), then creates,
 * then every other update.
 */
export interface RiskOrder {
  /** The steps of objects with a destructive step, in plan order. */
  destructive: Step[];
  risky: Step[][];
  creates: Step[][];
  other: Step[][];
}

export function riskOrder(plan: Plan): RiskOrder {
  const byIdentity = new Map<string, Step[]>();
  for (const s of plan.steps) {
    const list = byIdentity.get(s.object.identity);
    if (list) list.push(s);
    else byIdentity.set(s.object.identity, [s]);
  }
  const out: RiskOrder = { destructive: [], risky: [], creates: [], other: [] };
  const hot = new Set<string>();
  for (const [identity, steps] of byIdentity) {
    if (steps.some((s) => DESTRUCTIVE.has(s.action))) hot.add(identity);
    else if (steps.some((s) => s.action === 'create')) out.creates.push(steps);
    else if (steps.some((s) => stepRisk(s))) out.risky.push(steps);
    else out.other.push(steps);
  }
  for (const s of plan.steps) if (hot.has(s.object.identity)) out.destructive.push(s);
  return out;
}

/** A value on one line, whole (JSON; invisible characters as escapes). */
export function oneLine(v: unknown): string {
  return v === undefined ? '(absent)' : visible(JSON.stringify(v) ?? String(v));
}

const DIGITS = /\d+/g;
/** Names of the numbers of an identity, in order, in a grouped change (`{N}`, `{M}` …). */
const LETTERS = 'NMKLPQRSTUVW';
/** Marks a number of the identity inside a template (never in JSON text, which escapes controls). */
const MARK = '\u0000';

/** A template as shown: each mark as `{N}`. */
export function shownTemplate(t: string): string {
  return t.replace(/\u0000(.)\u0000/g, '{$1}');
}

/** One changed field of a group: its path and both values as templates. */
export interface GroupRow { path: string; before: string; after: string; sensitive: boolean; drift: boolean }

/** Objects whose changes are the same but for their identities' numbers: one entry of a plan. */
export interface ChangeGroup {
  kind: string;
  /** Each object's steps; the first object's stand for all. */
  objects: Step[][];
  /** Per step of an object: the action, module, reason (templated) and changed fields. */
  steps: { action: Action; module?: string; method: string; reason?: string; rows: GroupRow[] }[];
  /** Whether a template names numbers of the identities. */
  numbered: boolean;
}

/** An object's changes as text with every number taken out (`skeleton`), and those numbers in order. */
interface Shaped { steps: Step[]; skeleton: string; numbers: string[]; ids: string[] }

function shapeOf(steps: Step[]): Shaped {
  const numbers: string[] = [];
  const take = (t: string) => t.replace(DIGITS, (d) => {
    numbers.push(d);
    return MARK;
  });
  // One string, fields apart by control characters (JSON text and `visible` escape them; paths are names).
  let skeleton = steps[0].object.kind;
  for (const s of steps) {
    skeleton += `\u0001${s.action}\u0002${s.module ?? ''}\u0002${s.request.method}\u0002${s.reason === undefined ? '' : take(visible(s.reason))}`;
    for (const c of s.changes) {
      skeleton += `\u0003${c.path}\u0002${c.sensitive ? 'S' : ''}${c.drift ? 'D' : ''}`;
      if (!c.sensitive) skeleton += `\u0002${take(oneLine(c.before))}\u0002${take(oneLine(c.after))}`;
    }
  }
  return { steps, skeleton, numbers, ids: steps[0].object.identity.match(DIGITS) ?? [] };
}

/**
 * Splits objects with one skeleton into groups whose every number is either the same on all of
 * them or, on each, the same number of its own identity (the j-th: named by the j-th letter).
 * Where a number is neither, the objects that follow the identity number most of them follow
 * are set apart from the others; where none do (a backend id that differs), they are split by
 * its value.
 */
function splitByNumbers(objs: Shaped[]): { objs: Shaped[]; names: (string | undefined)[] }[] {
  const count = objs[0].numbers.length;
  const names: (string | undefined)[] = [];
  for (let p = 0; p < count; p++) {
    const v = objs[0].numbers[p];
    if (objs.every((o) => o.numbers[p] === v)) {
      names.push(undefined);
      continue;
    }
    // The identity number that most of them follow (all: named by it; most: those apart from the rest).
    let best = -1;
    let most = 1;
    for (let j = 0; j < LETTERS.length; j++) {
      let k = 0;
      for (const o of objs) if (o.numbers[p] === o.ids[j]) k++;
      if (k > most) [best, most] = [j, k];
    }
    if (most === objs.length) {
      names.push(LETTERS[best]);
      continue;
    }
    if (best >= 0) {
      const follow = objs.filter((o) => o.numbers[p] === o.ids[best]);
      const rest = objs.filter((o) => o.numbers[p] !== o.ids[best]);
      return [...splitByNumbers(follow), ...(rest.length > 1 ? splitByNumbers(rest) : [{ objs: rest, names: [] }])];
    }
    const by = new Map<string, Shaped[]>();
    for (const o of objs) {
      const list = by.get(o.numbers[p]);
      if (list) list.push(o);
      else by.set(o.numbers[p], [o]);
    }
    return [...by.values()].flatMap((x) => (x.length > 1 ? splitByNumbers(x) : [{ objs: x, names: [] }]));
  }
  return [{ objs, names }];
}

/**
 * Groups objects whose steps make the same changes: same kind, actions, modules, reasons and
 * changed paths, with values that are the same once each number that follows the objects'
 * identities is generalised: `"route 3-7"` on `HTTPSEdge/edge-3/routes/route-7` and `"route 4-1"`
 * on `HTTPSEdge/edge-4/routes/route-1` are `"route {N}-{M}"` ({N}: the first number of each
 * identity). A number that differs otherwise splits the group. Groups come in the order of their
 * first object; a group of one is an object shown as it is.
 */
export function groupChanges(objects: Step[][]): ChangeGroup[] {
  const bySkeleton = new Map<string, Shaped[]>();
  for (const steps of objects) {
    const sh = shapeOf(steps);
    const list = bySkeleton.get(sh.skeleton);
    if (list) list.push(sh);
    else bySkeleton.set(sh.skeleton, [sh]);
  }
  const out: { first: number; group: ChangeGroup }[] = [];
  const place = new Map(objects.map((o, i) => [o, i]));
  for (const list of bySkeleton.values()) {
    for (const part of list.length > 1 ? splitByNumbers(list) : [{ objs: list, names: [] }]) {
      const first = part.objs[0];
      let p = 0;
      const fill = (t: string) => t.replace(/\u0000/g, () => {
        const name = part.names[p];
        const v = first.numbers[p++];
        return name === undefined ? v : `${MARK}${name}${MARK}`;
      });
      const steps = first.steps.map((s) => ({
        action: s.action, module: s.module, method: s.request.method,
        reason: s.reason === undefined ? undefined : fill(visible(s.reason).replace(DIGITS, MARK)),
        rows: s.changes.map((c: Change): GroupRow => ({
          path: c.path,
          before: c.sensitive ? '' : fill(oneLine(c.before).replace(DIGITS, MARK)),
          after: c.sensitive ? '' : fill(oneLine(c.after).replace(DIGITS, MARK)),
          sensitive: !!c.sensitive,
          drift: !!c.drift,
        })),
      }));
      out.push({ first: place.get(first.steps)!, group: { kind: first.steps[0].object.kind, objects: part.objs.map((o) => o.steps), steps, numbered: part.names.some((x) => x !== undefined) } });
    }
  }
  return out.sort((a, b) => a.first - b.first).map((x) => x.group);
}

/** `on 951 HTTPS edge routes` (with what `{N}`, `{M}` stand for when the changes name them). */
export function groupTitle(g: ChangeGroup): string {
  return `on ${countOf(g.kind, g.objects.length)}`;
}

/** What the marks of a group's templates stand for. */
export function groupLegend(g: ChangeGroup): string {
  if (!g.numbered) return '';
  const used = new Set<string>();
  for (const s of g.steps) {
    for (const t of [s.reason ?? '', ...s.rows.flatMap((r) => [r.before, r.after])]) for (const m of t.matchAll(/\u0000(.)\u0000/g)) used.add(m[1]);
  }
  const names = [...LETTERS].filter((l) => used.has(l)).map((l) => `{${l}}`);
  const ord = ['first', 'second', 'third', 'fourth', 'fifth', 'sixth', 'seventh', 'eighth', 'ninth', 'tenth', 'eleventh', 'twelfth'];
  const which = [...LETTERS].filter((l) => used.has(l)).map((l) => ord[LETTERS.indexOf(l)]);
  return `${names.join(', ')}: the ${which.join(', ')} number${which.length > 1 ? 's' : ''} in each one's identity`;
}

/** A group's change on one line, for the text plan's summary: `description "route {N}" → "backend route {N}"`. */
export function groupLine(g: ChangeGroup, max = 60): string {
  const cut = (t: string) => {
    const s = shownTemplate(t);
    return s.length > max ? `${sliceChars(s, 0, max - 1)}…` : s;
  };
  const parts = g.steps.flatMap((s) => (s.rows.length
    ? s.rows.map((r) => (r.sensitive ? `${r.path} (sensitive value changed)` : `${r.path} ${cut(r.before)} → ${cut(r.after)}`))
    : [`${s.action}${s.module ? ` ${s.module}` : ''}`]));
  const shown = parts.slice(0, 3).join('; ');
  return parts.length > 3 ? `${shown}; and ${parts.length - 3} more field${parts.length - 3 === 1 ? '' : 's'}` : shown;
}
