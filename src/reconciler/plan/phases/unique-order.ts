import type { Body, UniqueDef } from '../../../kinds/types.js';
import { stepPatch } from '../patch.js';
import type { ObservedObject } from '../state.js';
import type { Step } from '../types.js';
import type { PlanContext } from './context.js';
import { uniqueValues } from './keys.js';
import type { Matched } from './match.js';
import { parentIdentities } from './refs.js';
import { objectPath } from '../../../contract/paths.js';
import type { Planned } from './steps.js';

/**
 * A value the service keeps unique (a hostport, a route match — the kind's `uniques`) moving from
 * one object to another: the step that frees it goes before the step that takes it. When the two
 * objects trade values, so that each would wait for the other, the holder first lets go of the
 * value in a step of its own (a release). Returns `steps` with those dependencies added (the steps
 * given are not modified: a step that gains one is a copy) and the releases after them.
 */
export function orderByUniqueValues(ctx: PlanContext, matched: Matched, planned: Planned, steps: readonly Step[]): Step[] {
  const out = [...steps];
  if (!out.length) return out; // nothing takes a value from anyone
  const holders = new Map<string, ObservedObject>();
  for (const o of ctx.observed) {
    for (const u of o.kind.uniques ?? []) {
      for (const v of uniqueValues(ctx, o.kind, o.body, u)) holders.set(`${o.kind.name}:${u.scope}:${u.perParent ? o.parentId : ''}:${v}`, o);
    }
  }
  const g = new StepGraph(out);
  const parentOf = parentIdentities(ctx.observed);
  for (const dec of matched.matches.values()) {
    if (!dec.d.kind.uniques?.length) continue;
    const main = planned.stepsOf.get(dec.d.identity)?.map((id) => g.get(id)).find((s) => s.action === 'create' || s.action === 'replace' || s.action === 'update');
    if (!main) continue;
    const parentId = dec.d.parentIdentity ? matched.matches.get(dec.d.parentIdentity)?.o?.id : undefined;
    for (const u of dec.d.kind.uniques) {
      for (const v of uniqueValues(ctx, dec.d.kind, dec.d.body, u)) {
        const holder = holders.get(`${dec.d.kind.name}:${u.scope}:${u.perParent ? parentId : ''}:${v}`);
        if (!holder || holder.id === dec.o?.id) continue;
        const theirs = g.ofObject(holder.id);
        if (!theirs.some((id) => g.reaches(id, main.id))) g.depend(main.id, theirs);
        else g.depend(main.id, [release(ctx, g, parentOf, holder, u, v, dec.d.identity)]);
      }
    }
  }
  return g.steps;
}

/** The plan's steps while dependencies are added: a step that gains one is copied first (copy on write). */
class StepGraph {
  private readonly byId = new Map<string, Step>();
  private readonly at = new Map<string, number>();
  private readonly byObject = new Map<string, string[]>();
  private readonly mine = new Set<Step>();

  constructor(readonly steps: Step[]) {
    steps.forEach((s, i) => this.index(s, i));
  }

  private index(s: Step, i: number) {
    this.byId.set(s.id, s);
    this.at.set(s.id, i);
    if (s.object.id) this.byObject.set(s.object.id, [...(this.byObject.get(s.object.id) ?? []), s.id]);
  }

  get(id: string): Step {
    return this.byId.get(id)!;
  }

  find(id: string): Step | undefined {
    return this.byId.get(id);
  }

  /** Ids of the steps acting on a live object. */
  ofObject(id: string): string[] {
    return this.byObject.get(id) ?? [];
  }

  /** A step made here: it may be changed in place. */
  add(s: Step) {
    this.steps.push(s);
    this.mine.add(s);
    this.index(s, this.steps.length - 1);
  }

  /** A step of the plan, copied the first time it is to change. */
  own(id: string): Step {
    let s = this.byId.get(id)!;
    if (!this.mine.has(s)) {
      s = { ...s, dependsOn: [...s.dependsOn] };
      this.mine.add(s);
      this.byId.set(id, s);
      this.steps[this.at.get(id)!] = s;
    }
    return s;
  }

  depend(id: string, on: string[]) {
    if (on.length) this.own(id).dependsOn.push(...on);
  }

  /** Whether step `from` depends, directly or not, on step `to`. */
  reaches(from: string, to: string): boolean {
    const seen = new Set<string>();
    const stack = [from];
    while (stack.length) {
      const id = stack.pop()!;
      if (id === to) return true;
      if (seen.has(id)) continue;
      seen.add(id);
      stack.push(...(this.byId.get(id)?.dependsOn ?? []));
    }
    return false;
  }
}

/**
 * Two objects trading unique values (routes swapping matches, edges swapping hostports) would
 * wait for each other: the holder first lets go of the value — a list drops it, a single value
 * takes a temporary form — and its own update sets the final value later. Returns the release's
 * step id (one per holder, gathering every value it lets go of).
 */
function release(ctx: PlanContext, g: StepGraph, parentOf: (id: string) => string, holder: ObservedObject, u: UniqueDef, value: string, taker: string): string {
  const identity = holder.marker?.id ?? holder.id;
  const id = `${identity}:release`;
  let step = g.find(id);
  const body = (step?.request.body as Body | undefined) ?? {};
  const freed = (x: unknown): unknown =>
    Array.isArray(x) ? x.filter((y) => String(y).toLowerCase() !== value) : `${String(x)}~edgeplane-swap`;
  // The field that carries the value is the one whose release makes the unique let go of it (a
  // description may hold the same text as the hostport or match it describes).
  const field = Object.keys(holder.body).find((k) => {
    const x = body[k] ?? holder.body[k];
    const holds = Array.isArray(x) ? x.some((y) => String(y).toLowerCase() === value) : String(x).toLowerCase() === value;
    return holds && !uniqueValues(ctx, holder.kind, { ...holder.body, ...body, [k]: freed(x) }, u).includes(value);
  });
  if (!field) return id;
  body[field] = freed(body[field] ?? holder.body[field]);
  if (!step) {
    step = {
      id, action: 'update',
      object: { kind: holder.kind.name, identity, name: identity.split('/').pop()!, id: holder.id, ...(holder.parentId ? { parent: parentOf(holder.parentId) } : {}) },
      request: { method: 'PATCH', path: objectPath(holder.kind, holder.id, holder.parentId ?? null), body },
      changes: [], dependsOn: [], reason: `frees ${value} for ${taker} first: the two objects trade unique values`,
    };
    g.add(step);
    for (const other of g.ofObject(holder.id)) if (other !== id) g.depend(other, [id]);
  } else step.reason += `, ${value} for ${taker}`;
  step.changes = Object.keys(body).map((f) => ({ path: f, before: holder.body[f], after: body[f] }));
  Object.assign(step, stepPatch(Object.fromEntries(Object.keys(body).map((f) => [f, holder.body[f]])), body, []));
  return id;
}
