import type { ObservedObject } from './state.js';
import { MARKER_CHANGE, type SafetyBlock, type Step } from './types.js';

export interface Threshold {
  /** Share of a kind's owned objects that may be deleted, replaced or updated in one plan. */
  ratio: number;
  /** Below this many owned objects of a kind the threshold does not apply. */
  minOwned: number;
}

export const DEFAULT_THRESHOLD: Threshold = { ratio: 0.3, minOwned: 10 };

/**
 * Whether a step removes or changes something the live object has: a delete or replace, a module
 * deleted, or a value that was there before. Adding what an object lacks does not count: a module
 * it does not have (the backend an interrupted apply had not attached yet, so that the apply that
 * finishes the job is not blocked), a field it had no value for, or an ownership marker (adoption,
 * a rename).
 */
function alters(s: Step): boolean {
  if (s.action === 'delete' || s.action === 'replace' || s.action === 'module.delete') return true;
  return s.changes.some((c) => c.before !== undefined && c.path !== MARKER_CHANGE);
}

/** Kinds where the plan would alter more than `ratio` of the owned objects (with ≥ `minOwned`). */
export function safetyBlocks(steps: Step[], observed: ObservedObject[], t: Threshold): SafetyBlock[] {
  const owned = new Map<string, number>();
  for (const o of observed) if (o.owner.type === 'this') owned.set(o.kind.name, (owned.get(o.kind.name) ?? 0) + 1);
  const deletes = new Map<string, Set<string>>();
  const updates = new Map<string, Set<string>>();
  for (const s of steps) {
    if (!s.object.id || !alters(s)) continue;
    const target = s.action === 'delete' || s.action === 'replace' ? deletes : updates;
    target.set(s.object.kind, (target.get(s.object.kind) ?? new Set()).add(s.object.id));
  }
  const out: SafetyBlock[] = [];
  for (const [kind, n] of owned) {
    const del = deletes.get(kind) ?? new Set<string>();
    const upd = [...(updates.get(kind) ?? [])].filter((id) => !del.has(id));
    const changed = del.size + upd.length;
    if (n >= t.minOwned && changed / n > t.ratio) out.push({ kind, owned: n, changed, deletes: del.size, updates: upd.length });
  }
  return out.sort((a, b) => a.kind.localeCompare(b.kind));
}
