import { kindByName } from '../../kinds/registry.js';
import type { JSONSchema, KindDef } from '../../kinds/types.js';
import { didYouMean } from '../../util/suggest.js';
import type { SourceDoc } from './load.js';
import { formatPath, type Position, type Problem } from './problems.js';
import { buildManifestSchema, childDefName, manifestKinds } from './schema.js';

/**
 * Overlays (docs/manifests.md, "Environments"): documents of an environment's overlay files that
 * change the manifests for that environment only. Each says what it does:
 *
 *   overlay: patch   kind and name of a base object, and the fields to change as a JSON merge patch
 *                    (RFC 7396: a mapping merges, null removes, anything else replaces). Children
 *                    are addressed by name (`routes: {api: {...}}`, `routes: {old: null}`), and
 *                    added under `add:` (`add: {routes: [...]}`).
 *   overlay: add     a whole object only this environment has (an error if the base has it).
 *   overlay: remove  kind and name of a base object this environment leaves out.
 *
 * A patch whose object, child or field does not exist is an error at the overlay: a typo is never
 * a new object or a change that silently does nothing. The patched document keeps the positions
 * of both sources: a field the overlay wrote is located in the overlay, every other in the base.
 */

export type OverlayMode = 'patch' | 'add' | 'remove';
export const OVERLAY_MODES: readonly OverlayMode[] = ['patch', 'add', 'remove'];

/** One overlay document, read: its mode, the target's kind and name. */
export interface OverlayDoc { doc: SourceDoc; mode: OverlayMode; kind: KindDef; name: string; hit: boolean }

let definitions: Record<string, JSONSchema> | undefined;
function definitionOf(name: string): JSONSchema | undefined {
  definitions ??= buildManifestSchema().definitions as Record<string, JSONSchema>;
  return definitions[name];
}

/** Reads the overlay documents (with variables already substituted): the well-formed ones, and a problem for each other. */
export function readOverlayDocs(docs: readonly SourceDoc[], problems: Problem[]): OverlayDoc[] {
  const out: OverlayDoc[] = [];
  const kinds = manifestKinds();
  for (const doc of docs) {
    const at = (path: (string | number)[], message: string, key = false) =>
      problems.push({ ...doc.locate(path, { key }), severity: 'error', path: formatPath(path), rule: 'overlay', message });
    const v = doc.value as Record<string, unknown>;
    if (!v || typeof v !== 'object' || Array.isArray(v)) {
      at([], 'an overlay document is a mapping with overlay (patch, add or remove), kind and name');
      continue;
    }
    if (!('overlay' in v)) {
      at([], 'say what this overlay document does: overlay: patch (change fields of a base object), overlay: add (an object only this environment has) or overlay: remove');
      continue;
    }
    const mode = v.overlay as OverlayMode;
    if (!OVERLAY_MODES.includes(mode)) {
      at(['overlay'], `must be patch, add or remove${typeof v.overlay === 'string' ? didYouMean(v.overlay, OVERLAY_MODES) : ''}`);
      continue;
    }
    const kind = kinds.find((k) => k.manifestKind === v.kind);
    if (!kind) {
      const known = kinds.map((k) => k.manifestKind!);
      at(v.kind === undefined ? [] : ['kind'], `${v.kind === undefined ? 'kind is required' : 'is not a kind'}${typeof v.kind === 'string' ? didYouMean(v.kind, known) : ''} (one of ${known.join(', ')})`);
      continue;
    }
    if (typeof v.name !== 'string') {
      at(v.name === undefined ? [] : ['name'], 'name is required: the name of the object this overlay ' + (mode === 'add' ? 'adds' : 'changes'));
      continue;
    }
    if (mode === 'remove') {
      const extra = Object.keys(v).filter((k) => k !== 'overlay' && k !== 'kind' && k !== 'name');
      if (extra.length) {
        at([extra[0]], 'overlay: remove takes only kind and name (the object is left out of this environment)', true);
        continue;
      }
    }
    if (mode === 'patch' && !fieldsExist(doc, kind, v, problems)) continue;
    out.push({ doc, mode, kind, name: v.name, hit: false });
  }
  return out;
}

/** Every field a patch names is one the kind has (its modules' and children's too): a problem at each other. */
function fieldsExist(doc: SourceDoc, kind: KindDef, patch: Record<string, unknown>, problems: Problem[]): boolean {
  let ok = true;
  const bad = (path: (string | number)[], message: string, key = true) => {
    ok = false;
    problems.push({ ...doc.locate(path, { key }), severity: 'error', path: formatPath(path), rule: 'overlay', message });
  };
  const check = (schema: JSONSchema | undefined, value: unknown, path: (string | number)[]) => {
    if (!schema || !value || typeof value !== 'object' || Array.isArray(value)) return;
    const props = schema.properties as Record<string, JSONSchema> | undefined;
    if (!props || schema.additionalProperties !== false) return;
    for (const k of Object.keys(value)) {
      if (!(k in props)) bad([...path, k], `is not a field of ${path.length ? formatPath(path) : `a ${kind.manifestKind}`}${didYouMean(k, Object.keys(props))}`);
      else check(props[k], (value as Record<string, unknown>)[k], [...path, k]);
    }
  };
  const def = definitionOf(kind.manifestKind!)!;
  const props = def.properties as Record<string, JSONSchema>;
  for (const k of Object.keys(patch)) {
    if (k === 'overlay' || k === 'kind' || k === 'name') continue;
    const value = patch[k];
    if (k === 'add') {
      const embeds = Object.keys(kind.embeds ?? {});
      if (!value || typeof value !== 'object' || Array.isArray(value)) {
        bad([k], `add: holds children to add, by field (${embeds.join(', ') || `a ${kind.manifestKind} has none`}), each a list`, false);
        continue;
      }
      for (const [f, list] of Object.entries(value)) {
        if (!embeds.includes(f)) bad([k, f], `a ${kind.manifestKind} has no children in ${f}${didYouMean(f, embeds)}${embeds.length ? ` (it has ${embeds.join(', ')})` : ''}`);
        else if (!Array.isArray(list)) bad([k, f], `a list of the ${f} to add`, false);
      }
      continue;
    }
    if (k === 'renamed_from') {
      bad([k], 'an overlay cannot rename an object (rename it in the base manifests)');
      continue;
    }
    if (!(k in props)) {
      bad([k], `is not a field of a ${kind.manifestKind}${didYouMean(k, [...Object.keys(props), 'add'])}`);
      continue;
    }
    if (kind.embeds && k in kind.embeds) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        bad([k], `in a patch, ${k} is a mapping from each child's name to its patch (null leaves it out); children only this environment has go under add: {${k}: [...]}`, false);
        continue;
      }
      const child = definitionOf(childDefName(kind, k));
      for (const [name, p] of Object.entries(value)) {
        if (p === null) continue;
        if (!p || typeof p !== 'object' || Array.isArray(p)) bad([k, name], 'a patch of this child: a mapping of its fields (or null to leave it out)', false);
        else if ('name' in p) bad([k, name, 'name'], 'the child is named by its key: an overlay cannot rename it');
        else check(child, p, [k, name]);
      }
      continue;
    }
    check(props[k], value, [k]);
  }
  return ok;
}

/** Where a value of the patched document came from: a path in the overlay, for every path under `at`. */
interface Origin { at: (string | number)[]; doc: SourceDoc; path: (string | number)[] }

/**
 * A base document with overlay patches applied. Its positions: a field a patch wrote is located
 * in the overlay that wrote it; a child kept from the base at its place there (children removed
 * before it move it in the list); everything else in the base document.
 */
export class PatchedDoc implements SourceDoc {
  readonly file: string;
  readonly index: number;
  readonly plainText: boolean | undefined;
  constructor(readonly base: SourceDoc, readonly value: unknown, private readonly origins: Origin[], private readonly childPlaces: Map<string, number[]>, overlay: SourceDoc) {
    this.file = base.file;
    this.index = base.index;
    this.plainText = !!base.plainText && !!overlay.plainText;
  }

  locate(path: (string | number)[], opts?: { key?: boolean }): Position {
    let best: Origin | undefined;
    for (const o of this.origins) {
      if (o.at.length <= path.length && (!best || o.at.length > best.at.length) && o.at.every((s, i) => path[i] === s)) best = o;
    }
    if (best) return best.doc.locate([...best.path, ...path.slice(best.at.length)], opts);
    const places = typeof path[0] === 'string' && typeof path[1] === 'number' ? this.childPlaces.get(path[0]) : undefined;
    if (places) return this.base.locate([path[0], places[path[1] as number] ?? path[1], ...path.slice(2)], opts);
    return this.base.locate(path, opts);
  }
}

const isMapping = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** RFC 7396 merge of `patch` into `target`, the overlay's paths recorded for what it wrote. */
function mergePatch(target: unknown, patch: unknown, at: (string | number)[], from: (string | number)[], doc: SourceDoc, origins: Origin[]): unknown {
  if (!isMapping(patch) || !isMapping(target)) {
    origins.push({ at, doc, path: from });
    return isMapping(patch) ? mergePatch({}, patch, at, from, doc, origins) : patch;
  }
  const out: Record<string, unknown> = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) {
      delete out[k];
      origins.push({ at: [...at, k], doc, path: [...from, k] });
    } else out[k] = mergePatch(out[k], v, [...at, k], [...from, k], doc, origins);
  }
  return out;
}

/**
 * `base` with one `overlay: patch` document applied, or a problem for each child it names that the
 * base does not have (with the names it has) and each child it adds that is there already.
 */
export function applyPatch(base: SourceDoc, o: OverlayDoc, problems: Problem[]): SourceDoc {
  const patch = o.doc.value as Record<string, unknown>;
  const origins: Origin[] = [];
  const childPlaces = new Map<string, number[]>();
  const value: Record<string, unknown> = { ...(base.value as Record<string, unknown>) };
  const embeds = o.kind.embeds ?? {};
  const problem = (path: (string | number)[], message: string, key = true) =>
    problems.push({ ...o.doc.locate(path, { key }), severity: 'error', path: formatPath(path), rule: 'overlay', message });
  for (const [k, v] of Object.entries(patch)) {
    if (k === 'overlay' || k === 'kind' || k === 'name' || k === 'add') continue;
    if (k in embeds) continue;
    if (v === null) {
      delete value[k];
      origins.push({ at: [k], doc: o.doc, path: [k] });
    } else value[k] = mergePatch(value[k], v, [k], [k], o.doc, origins);
  }
  const adds = isMapping(patch.add) ? patch.add : {};
  for (const field of Object.keys(embeds)) {
    const patches = isMapping(patch[field]) ? patch[field] as Record<string, unknown> : undefined;
    const added = Array.isArray(adds[field]) ? adds[field] as unknown[] : undefined;
    if (!patches && !added) continue;
    const list = Array.isArray(value[field]) ? value[field] as unknown[] : [];
    const names = list.map((c) => (isMapping(c) && typeof c.name === 'string' ? c.name : undefined));
    const out: unknown[] = [];
    const places: number[] = [];
    for (let j = 0; j < list.length; j++) {
      const p = names[j] !== undefined && patches ? patches[names[j]!] : undefined;
      if (p === null) continue;
      const i = out.length;
      places.push(j);
      out.push(p === undefined ? list[j] : mergePatch(list[j], p, [field, i], [field, names[j]!], o.doc, origins));
    }
    for (const name of Object.keys(patches ?? {})) {
      if (!names.includes(name)) problem([field, name], `${o.kind.manifestKind}/${o.name} has no ${kindByName(embeds[field]).title} named ${JSON.stringify(name)} in ${field}${didYouMean(name, names.filter((n): n is string => n !== undefined))}; to add one in this environment, list it under add: {${field}: [...]}`);
    }
    (added ?? []).forEach((c, k) => {
      const name = isMapping(c) ? c.name : undefined;
      if (typeof name === 'string' && names.includes(name)) problem(['add', field, k, 'name'], `${o.kind.manifestKind}/${o.name} has a ${kindByName(embeds[field]).title} named ${JSON.stringify(name)} already: change it under ${field}: {${name}: {...}}`, false);
      origins.push({ at: [field, out.length], doc: o.doc, path: ['add', field, k] });
      places.push(-1);
      out.push(c);
    });
    value[field] = out;
    childPlaces.set(field, places);
  }
  return new PatchedDoc(base, value, origins, childPlaces, o.doc);
}

/** An `overlay: add` document as a manifest document: the same, without `overlay:`. */
export class AddedDoc implements SourceDoc {
  readonly file: string;
  readonly index: number;
  readonly plainText: boolean | undefined;
  readonly value: unknown;
  constructor(readonly source: SourceDoc) {
    this.file = source.file;
    this.index = source.index;
    this.plainText = source.plainText;
    const { overlay: _, ...rest } = source.value as Record<string, unknown>;
    this.value = rest;
  }

  locate(path: (string | number)[], opts?: { key?: boolean }): Position {
    return this.source.locate(path, opts);
  }
}
