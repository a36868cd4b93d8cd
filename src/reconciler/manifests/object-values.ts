import type { Body, KindDef, RefDef, UniqueDef } from '../../kinds/types.js';
import { forEachRefValue } from '../../kinds/refs.js';
import { normalizeFields } from '../plan/normalize.js';
import type { ManifestObject, RefValue } from './model.js';
import { NAME_PATTERN, namedTarget } from './schema.js';

/*
 * What the passes across documents read of an object — the references it makes, the values it
 * holds that the service keeps unique — found once per object and kept with it. The planner,
 * the graph and export read references the same way.
 */

/** A shared empty list, for the many objects that have none of a thing (frozen: never added to). */
const NONE: never[] = Object.freeze([]) as unknown as never[];

/**
 * Every reference value of an object: its own fields' and its modules', with where it sits (the
 * walk is the kinds' own, `forEachRefValue`). The list is this call's; one kept with thousands of
 * objects is made at its exact length (an array grown by `push` keeps room for more, which a plan
 * of thousands of objects would carry to the end).
 */
export function refValues(o: { kind: KindDef; body: Body }): RefValue[] {
  const out: RefValue[] = [];
  forEachRefValue(o.kind, o.body, (def, value, module, index) => {
    const at = module === undefined ? ownPath(def.field) : inModule(module.name, def.field);
    out.push({ def, value, path: index === undefined ? at : indexed(at, index) });
  });
  return out.length === 0 ? NONE : out.slice();
}

/** `[field]`, one array per field (shared, never modified). */
const ownPaths = new Map<string, string[]>();
function ownPath(field: string): string[] {
  let path = ownPaths.get(field);
  if (!path) ownPaths.set(field, (path = [field]));
  return path;
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
  if (!path) byField.set(field, (path = [module, field]));
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
