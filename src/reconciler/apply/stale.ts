import { observeLists, type ObservedLists } from '../plan/observed.js';
import type { Plan } from '../plan/types.js';

/**
 * Why a saved plan can no longer be applied as it is: an object it touches changed or vanished
 * since it was read, or an object it would create now exists (another apply made it). Empty:
 * the plan still describes the live state it was made from.
 */
export function staleReasons(plan: Plan, lists: ObservedLists): string[] {
  const live = observeLists(lists, plan.stack);
  const byId = new Map(live.map((o) => [o.id, o]));
  // Named as the plan names them: an object it adopts has no marker yet.
  const planned = new Map<string, string>();
  for (const s of plan.steps) if (s.object.id && !planned.has(s.object.id)) planned.set(s.object.id, s.object.identity);
  const out: string[] = [];
  for (const [id, fingerprint] of Object.entries(plan.observed)) {
    const o = byId.get(id);
    const name = planned.get(id) ?? o?.marker?.id;
    const what = name ? `${name} (${id})` : id;
    if (!o) out.push(`${what} no longer exists`);
    else if (o.fingerprint !== fingerprint) out.push(`${what} changed since the plan was made`);
  }
  const owned = new Map<string, string>();
  for (const o of live) if (o.owner.type === 'this' && o.marker) owned.set(o.marker.id, o.id);
  for (const s of plan.steps) {
    if (s.action !== 'create') continue;
    const existing = owned.get(s.object.identity);
    if (existing) out.push(`${s.object.identity} already exists (${existing}): it was created after the plan was made`);
  }
  return out;
}
