import type { Body, KindDef, RefDef, UniqueDef } from '../../kinds/types.js';
import { Scratch } from '../../util/scratch.js';
import { normalizeFields } from '../plan/normalize.js';
import { matchPaths, plainPath } from '../paths.js';
import type { ManifestObject, RefValue } from './model.js';
import { NAME_PATTERN, namedTarget } from './schema.js';

/*
 * What the passes across documents read of an object — the references it makes, the values it
 * holds that the service keeps unique — found once per object and kept with it. The planner,
 * the graph and export read references the same way.
 */

/**
 * A shared empty list, for the many objects that have none of a thing (frozen: never added to).
 * Lists kept with thousands of objects are made at their exact length (`Scratch.take`): an array
 * grown by `push` keeps room for 16 more, which a plan of thousands of objects carries to the end.
 */
const NONE: never[] = Object.freeze([]) as unknown as never[];
const refScratch = new Scratch<RefValue>();

/** Every reference value of an object: its own fields' and its modules', with where it sits. */
export function refValues(o: { kind: KindDef; body: Body }): RefValue[] {
  const out = refScratch;
  out.clear(); // empty unless a walk before was cut short
  if (o.kind.refs) takeRefs(out, o.kind.refs, o.body, undefined);
  const modules = o.kind.modules;
  if (modules) {
    for (let i = 0; i < modules.length; i++) {
      const m = modules[i];
      if (m.refs && o.body[m.name]) takeRefs(out, m.refs, o.body[m.name], m.name);
    }
  }
  return out.take(NONE);
}

// Module-level, not a closure per object: it runs for every object of every plan.
function takeRefs(out: Scratch<RefValue>, defs: RefDef[], holder: unknown, module: string | undefined) {
  for (let d = 0; d < defs.length; d++) {
    const def = defs[d];
    const plain = plainPath(def.field);
    if (plain) {
      // Most refs name one field: found by walking (as `matchPaths` would), with no hit made. The
      // path is the pattern's own, or the module field's (shared, never modified): a ref's path may be it.
      let v = holder;
      for (let i = 0; i < plain.length && v !== undefined; i++) {
        v = v && typeof v === 'object' && !Array.isArray(v) && plain[i] in v ? (v as Record<string, unknown>)[plain[i]] : undefined;
      }
      if (v !== undefined) takeRef(out, def, v, module === undefined ? plain : inModule(module, def.field), true);
      continue;
    }
    const hits = matchPaths(holder, def.field);
    for (let h = 0; h < hits.length; h++) {
      const hit = hits[h];
      takeRef(out, def, hit.value, module === undefined ? hit.path : [module, ...hit.path], false);
    }
  }
}

/** The reference (or, for a `many` ref, references) of one value found at `at`; `shared`: `at` is a path kept for the pattern. */
function takeRef(out: Scratch<RefValue>, def: RefDef, value: unknown, at: (string | number)[], shared: boolean) {
  if (def.many && Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (typeof value[i] === 'string') out.push({ def, value: value[i], path: shared ? indexed(at, i) : [...at, i] });
  } else if (typeof value === 'string') out.push({ def, value, path: at });
}

/** `[...at, i]` for a shared path `at`: one array per path and index (shared, never modified). */
const indexedPaths = new Map<(string | number)[], (string | number)[][]>();
function indexed(at: (string | number)[], i: number): (string | number)[] {
  let byIndex = indexedPaths.get(at);
  if (!byIndex) indexedPaths.set(at, (byIndex = []));
  return (byIndex[i] ??= [...at, i]);
}

/** A module field's path (`backend.backend_id`), one array per module and field (shared, never modified). */
const modulePaths = new Map<string, Map<string, string[]>>();
function inModule(module: string, field: string): string[] {
  let byField = modulePaths.get(module);
  if (!byField) modulePaths.set(module, (byField = new Map()));
  let path = byField.get(field);
  if (!path) byField.set(field, (path = [module, ...field.split('.')]));
  return path;
}

/** `refValues` of a manifest object, computed once per object (objects are shared between watch runs). */
export function refsOf(o: ManifestObject): RefValue[] {
  return (o.refs ??= refValues(o));
}

/** A ref value that is a manifest name (not a raw id) of a kind the manifests manage. */
const NAME_RE = new RegExp(`^${NAME_PATTERN}$`);
export function isName(def: RefDef, value: string): boolean {
  return !!namedTarget(def) && NAME_RE.test(value);
}

/** Each unique's values of an object (per `kind.uniques`), computed once per object. */
const idsAsTheyAre = (id: string) => id;
export function uniqueValuesOf(o: ManifestObject): string[][] {
  let v = o.uniques;
  if (!v) {
    const uniques = o.kind.uniques;
    if (!uniques?.length) return (o.uniques = NONE);
    let fields: Body | undefined;
    // Unique values are read from plain fields (hostports, a route's match), in normal form.
    try { fields = normalizeFields(o.kind, o.body, idsAsTheyAre); } catch { /* a body with schema errors */ }
    v = new Array<string[]>(uniques.length);
    for (let i = 0; i < uniques.length; i++) v[i] = fields ? uniqueStrings(uniques[i], fields) : NONE;
    o.uniques = v;
  }
  return v;
}

/** A unique's values of an object's plain fields: a body with schema errors (`hostports: 7`) may give anything, and only strings count. */
function uniqueStrings(u: UniqueDef, fields: Body): string[] {
  try {
    const got: unknown = u.values(fields);
    if (!Array.isArray(got)) return NONE;
    for (let i = 0; i < got.length; i++) if (typeof got[i] !== 'string') return NONE;
    return got as string[];
  } catch { return NONE; }
}
