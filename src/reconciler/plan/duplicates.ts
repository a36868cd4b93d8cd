import { refValues } from '../manifests/object-values.js';
import type { ObservedObject } from './state.js';

/**
 * Ids some live object refers to (other than itself), and ids of parents with children (an edge
 * holding routes): what a duplicate's keeper is chosen by.
 */
export function referencedIds(observed: readonly ObservedObject[]): Set<string> {
  const out = new Set<string>();
  for (const r of observed) {
    if (r.parentId !== undefined) out.add(r.parentId);
    for (const x of refValues({ kind: r.kind, body: r.body })) if (x.value !== r.id) out.add(x.value);
  }
  return out;
}

/**
 * Of copies of one object (an interrupted apply, two at once), the one kept: the first something
 * refers to or that holds children, so that nothing working is re-pointed or made again (the
 * edge holding the stack's routes, not an empty copy), else the first listed. The planner and export
 * choose by this one rule, so an export of duplicates plans to no change of the kept copy.
 */
export function keptCopy(copies: readonly ObservedObject[], referenced: (id: string) => boolean): ObservedObject | undefined {
  return copies.find((o) => referenced(o.id)) ?? copies[0];
}
