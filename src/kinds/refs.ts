import type { Body, KindDef, ModuleDef, RefDef } from './types.js';

/**
 * What an object refers to, read from its kind's description: the one walk over an object's
 * references, for the service (what a write stores and checks) and the reconciler (what a plan
 * orders, checks and exports). A ref's field is a plain field of the body or of a module's
 * value; a `many` ref's field is a list, of which only the strings count.
 */
export type RefVisit = (def: RefDef, value: string, module: ModuleDef | undefined, index: number | undefined) => void;

/** Calls `visit` for every id an object's body holds: its own fields' first, then its modules', in the description's order. */
export function forEachRefValue(kind: KindDef, body: Body, visit: RefVisit): void {
  if (kind.refs) visitRefs(kind.refs, body, undefined, visit);
  const modules = kind.modules;
  if (!modules) return;
  for (let i = 0; i < modules.length; i++) {
    const m = modules[i];
    if (!m.refs) continue;
    const held = body[m.name];
    if (held && typeof held === 'object' && !Array.isArray(held)) visitRefs(m.refs, held as Body, m, visit);
  }
}

// Module-level, not a closure per object: it runs for every object of every plan.
function visitRefs(defs: RefDef[], holder: Body, module: ModuleDef | undefined, visit: RefVisit): void {
  for (let d = 0; d < defs.length; d++) {
    const def = defs[d];
    const value = holder[def.field];
    if (def.many) {
      if (!Array.isArray(value)) continue;
      for (let i = 0; i < value.length; i++) if (typeof value[i] === 'string') visit(def, value[i] as string, module, i);
    } else if (typeof value === 'string') visit(def, value, module, undefined);
  }
}
