import type { LiveView } from './live-view.js';
import type { ObservedObject } from './state.js';
import { MARKER_CHANGE, type SafetyBlock, type Step } from './types.js';

export interface Threshold {
  /** Share of a kind's owned objects that may be deleted, replaced or updated in one plan. */
  ratio: number;
  /** Below this many owned objects of a kind the threshold does not apply. */
  minOwned: number;
  /**
   * Updates that count as well as deletes and replaces (`safety.threshold.count_updates_of`):
   * field paths (`hostports`, `backend`, `oidc.client_secret`: a change at or under one) and kinds
   * by registry name (`httpsEdge`: any update of it). Absent or empty: updates never count.
   */
  countUpdatesOf?: { fields: readonly string[]; kinds: readonly string[] };
}

export const DEFAULT_THRESHOLD: Threshold = { ratio: 0.3, minOwned: 10 };

/**
 * Whether a step counts for the threshold: a delete or replace, a module deleted (an auth module
 * removed from a route), or — only for the fields and kinds `countUpdatesOf` lists — an update
 * that changes a value the live object has. By default updates pass: a new description on every
 * route is not what the threshold guards against. Adding what an object lacks never counts: a
 * module it does not have (the backend an interrupted apply had not attached yet, so that the apply
 * that finishes the job is not blocked), a field it had no value for, or an ownership marker
 * (adoption, a rename).
 */
function alters(s: Step, t: Threshold): boolean {
  if (s.action === 'delete' || s.action === 'replace' || s.action === 'module.delete') return true;
  const count = t.countUpdatesOf;
  if (!count || (!count.fields.length && !count.kinds.length)) return false;
  const kind = count.kinds.includes(s.object.kind);
  return s.changes.some((c) => c.before !== undefined && c.path !== MARKER_CHANGE && (kind || count.fields.some((f) => underField(c.path, f))));
}

/** `path` is the field `f` or lies under it (`backend.backend_id` under `backend`; `hostports[0]` under `hostports`). */
function underField(path: string, f: string): boolean {
  return path === f || path.startsWith(`${f}.`) || path.startsWith(`${f}[`);
}

/**
 * Kinds where the plan would delete or replace (or update, as `countUpdatesOf` says) more than
 * `ratio` of the owned objects (with ≥ `minOwned`).
 *
 * Counted per ownership-marker identity, not per live object: copies of one identity (duplicates
 * left by an interrupted apply or two applies at once) are one owned object, and deleting a copy
 * while another copy of the same identity stays removes nothing the stack manages — the apply that
 * cleans up 245 duplicates is not blocked, and the duplicates do not dilute the share either. An
 * identity counts as deleted when a copy is replaced, or when every copy goes (its own delete, or
 * its parent's). Objects without this stack's marker (adopted ones) count by id.
 */
export function safetyBlocks(steps: Step[], live: LiveView, t: Threshold): SafetyBlock[] {
  // Most plans (a no-op, a few updates that only add) alter nothing: no counting over every object.
  if (!steps.some((s) => s.object.id && alters(s, t))) return [];
  // Only the kinds that steps alter are counted, and only the objects steps act on are looked up:
  // a save that edits one edge must not walk every object of every kind.
  const kinds = new Set<string>();
  for (const s of steps) if (s.object.id && alters(s, t)) kinds.add(s.object.kind);
  for (const s of steps) for (const c of s.cascade ?? []) kinds.add(c.kind);
  const deleted = new Set<string>();
  for (const s of steps) if (s.action === 'delete' && s.object.id) deleted.add(s.object.id);
  const gone = (o: ObservedObject) => deleted.has(o.id) || (o.parentId !== undefined && deleted.has(o.parentId));
  // A duplicate deleted while a copy of the same identity stays: nothing the stack manages goes.
  const copyStays = (o: ObservedObject | undefined, kind: string) => o?.owner.type === 'this' && !!o.marker && !!live.ownedOf(kind).get(o.marker.id)?.some((c) => !gone(c));

  const deletes = new Map<string, Set<string>>();
  const updates = new Map<string, Set<string>>();
  for (const s of steps) {
    if (!s.object.id || !alters(s, t)) continue;
    const o = live.get(s.object.id);
    const key = o ? identityOf(o) : `id:${s.object.id}`;
    if (s.action === 'delete' && copyStays(o, s.object.kind)) continue;
    const target = s.action === 'delete' || s.action === 'replace' ? deletes : updates;
    target.set(s.object.kind, (target.get(s.object.kind) ?? new Set()).add(key));
  }
  // Children deleted with their parent (an edge's routes) are deleted as surely as by steps of their own.
  for (const s of steps) {
    if (s.action !== 'delete' || !s.cascade) continue;
    for (const c of s.cascade) {
      const o = live.get(c.id!);
      if (copyStays(o, c.kind)) continue;
      deletes.set(c.kind, (deletes.get(c.kind) ?? new Set()).add(o ? identityOf(o) : `id:${c.id}`));
    }
  }
  const out: SafetyBlock[] = [];
  for (const kind of kinds) {
    const n = live.ownedOf(kind).size;
    if (!n) continue;
    const del = deletes.get(kind) ?? new Set<string>();
    const upd = [...(updates.get(kind) ?? [])].filter((id) => !del.has(id));
    const changed = del.size + upd.length;
    if (n >= t.minOwned && changed / n > t.ratio) out.push({ kind, owned: n, changed, deletes: del.size, updates: upd.length });
  }
  return out.sort((a, b) => a.kind.localeCompare(b.kind));
}

/** What identifies an object for the threshold: this stack's marker identity, else its id. */
function identityOf(o: ObservedObject): string {
  return o.owner.type === 'this' && o.marker ? `marker:${o.marker.id}` : `id:${o.id}`;
}
