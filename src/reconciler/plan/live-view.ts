import { referencedIds } from './duplicates.js';
import type { ObservedObject } from './state.js';

/**
 * What the planner asks of every live object read, beyond the objects it plans: an object by id,
 * this stack's objects of a kind by identity (the safety threshold's counts), and whether
 * something refers to an id (which of duplicates is kept). A plan over every object answers from
 * its list (`liveView`); watch plans over part of the objects and answers from indexes it keeps
 * between runs.
 */
export interface LiveView {
  get(id: string): ObservedObject | undefined;
  /** This stack's live objects of a kind, by marker identity: more than one where an interrupted apply left duplicates. */
  ownedOf(kind: string): ReadonlyMap<string, readonly ObservedObject[]>;
  /** Whether a live object other than itself refers to this id, or it has children (`referencedIds`). */
  referenced(id: string): boolean;
}

const NO_OWNED: ReadonlyMap<string, readonly ObservedObject[]> = new Map();

/** A list's answers, each index made on first use (most plans ask for none). */
export function liveView(observed: readonly ObservedObject[]): LiveView {
  let byId: Map<string, ObservedObject> | undefined;
  let owned: Map<string, Map<string, ObservedObject[]>> | undefined;
  let referenced: Set<string> | undefined;
  return {
    get(id) {
      if (!byId) {
        byId = new Map();
        for (const o of observed) byId.set(o.id, o);
      }
      return byId.get(id);
    },
    ownedOf(kind) {
      if (!owned) {
        owned = new Map();
        for (const o of observed) {
          if (o.owner.type !== 'this' || !o.marker) continue;
          let ids = owned.get(o.kind.name);
          if (!ids) owned.set(o.kind.name, (ids = new Map()));
          const copies = ids.get(o.marker.id);
          if (copies) copies.push(o);
          else ids.set(o.marker.id, [o]);
        }
      }
      return owned.get(kind) ?? NO_OWNED;
    },
    referenced(id) {
      return (referenced ??= referencedIds(observed)).has(id);
    },
  };
}
