import type { ErrorObject } from 'ajv';
import * as generated from '../../generated/manifest-validators.js';
import { moduleCheckForm } from '../../kinds/check.js';
import { kindByName } from '../../kinds/registry.js';
import type { Body, CheckContext, KindDef } from '../../kinds/types.js';
import { collectingAjv, describeAjvError, schemaKey, type Validator } from '../../contract/validation.js';
import { encodeMetadata, METADATA_LIMIT, TOOL, MARKER_VERSION } from '../ownership/marker.js';
import { matchPaths, type Hit } from '../paths.js';
import { utf8Bytes } from '../../util/bytes.js';
import { unstorableText } from '../../util/text.js';
import { Scratch } from '../../util/scratch.js';
import { didYouMean } from '../../util/suggest.js';
import type { SourceDoc } from './load.js';
import { childPrefix, identityOf, isSecretRef, type ManifestObject } from './model.js';
import { refsOf, uniqueValuesOf } from './object-values.js';
import { adder, CrossChecks, type Add } from './cross-checks.js';
import { sortProblems, type Problem } from './problems.js';
import { buildManifestSchema, manifestKinds, MANIFEST_SCHEMA_ID } from './schema.js';

export interface ValidateOptions {
  /** Literal secrets are errors instead of warnings. */
  strict?: boolean;
  /** The stack the marker will name (its length counts against the metadata limit). */
  stack: string;
}

export interface Validated { objects: ManifestObject[]; problems: Problem[] }

let validators: Map<string, Validator> | undefined;
/**
 * The validator of a manifest kind: precompiled by `npm run schemas`
 * (src/generated/manifest-validators.js), or compiled now when the manifest schema has changed
 * since (the precompiled ones are then stale; a test fails until they are regenerated).
 */
function validatorFor(manifestKind: string): Validator {
  if (!validators) {
    const schema = buildManifestSchema();
    const precompiled = generated as unknown as Record<string, Validator>;
    if (generated.SCHEMA_KEY === schemaKey(schema)) {
      validators = new Map(manifestKinds().map((k) => [k.manifestKind!, precompiled[k.manifestKind!]]));
    } else {
      const ajv = collectingAjv();
      if (!ajv.getSchema(MANIFEST_SCHEMA_ID)) ajv.addSchema(schema);
      validators = new Map(manifestKinds().map((k) => [k.manifestKind!, ajv.getSchema(`${MANIFEST_SCHEMA_ID}#/definitions/${k.manifestKind}`)! as Validator]));
    }
  }
  return validators.get(manifestKind)!;
}

/**
 * Validates parsed manifests in passes — shape, schema, names, references, uniqueness, cycles,
 * exclusive modules, secrets, metadata size, the service's checks — and returns every problem
 * found, each with its position, plus the objects (with `valid` set on those that passed the
 * schema).
 */
export function validateManifests(docs: SourceDoc[], opts: ValidateOptions, memo?: ValidationMemo): Validated {
  const problems: Problem[] = [];
  const objects: ManifestObject[] = [];
  const files = new Map<string, number>();
  const scratch = new LocalScratch(); // this call's: two validations may run in one process
  for (let i = 0; i < docs.length; i++) {
    const doc = docs[i];
    if (!files.has(doc.file)) files.set(doc.file, files.size);
    const local = memo?.local(doc, opts) ?? localPasses(doc, opts, scratch);
    if (local.object) objects.push(local.object);
    problems.push(...local.problems);
  }
  const cross = new CrossChecks((file) => files.get(file)!);
  cross.add(objects);
  problems.push(...cross.problems());
  return { objects, problems: sortProblems(problems) };
}

interface Local { object?: ManifestObject; problems: Problem[] }

/** The passes that read one document alone: shape and schema, exclusive modules, secrets, metadata size, the service's checks. */
function localPasses(doc: SourceDoc, opts: ValidateOptions, scratch: LocalScratch): Local {
  const { problems: localProblems, add, errors: errorPaths } = scratch;
  localProblems.clear(); // empty unless a document before failed
  if (errorPaths.length) errorPaths.length = 0;
  textPass(doc, add);
  const object = shapePass(doc, add, errorPaths);
  if (object) {
    objectPasses(object, add, opts, errorPaths);
    for (let i = 0; i < object.children.length; i++) objectPasses(object.children[i], add, opts, errorPaths);
    perParentPass(object, add);
  }
  return { object, problems: localProblems.take(NONE) };
}

/**
 * What one document's passes find: problems, and the paths of its schema errors. One list each per
 * validation (or memo), reused for document after document (the passes do not nest; most
 * documents have neither).
 */
class LocalScratch {
  readonly problems = new Scratch<Problem>();
  readonly add = adder(this.problems);
  readonly errors: (string | number)[][] = [];
}

function objectPasses(o: ManifestObject, add: Add, opts: ValidateOptions, errorPaths: (string | number)[][]) {
  // These read the body defensively, so they also run on objects with schema errors.
  exclusivePass(o, add);
  secretPass(o, add, !!opts.strict);
  if (o.valid) metadataPass(o, add, opts.stack);
  // What the passes across documents read of each object, found here (per document, kept with it).
  refsOf(o);
  uniqueValuesOf(o);
  // The service's checks run on every part the schema found no fault in: a schema error in
  // one route (or one module) does not hide a broken rule in another.
  checkPass(o, add, errorPaths);
}

/**
 * The number of children of a kind one parent may hold (`perParent.count`: routes per edge). The
 * service refuses the child over it, so a plan of more would stop partway through its apply. The
 * children's bytes together (`perParent.bytes`) are left to the service: their stored size is
 * not the manifest's (references by name become ids).
 */
function perParentPass(o: ManifestObject, add: Add) {
  const embeds = o.kind.embeds;
  if (!embeds || !o.children.length) return;
  for (const field in embeds) {
    const childKind = kindByName(embeds[field]);
    const max = childKind.perParent?.count;
    if (max === undefined) continue;
    let count = 0;
    for (let i = 0; i < o.children.length; i++) if (o.children[i].kind === childKind) count++;
    if (count > max) add(o, [field], 'limit', `an ${o.kind.title} holds at most ${max} ${childKind.title}s; this one has ${count}, and the service refuses every one past ${max}`);
  }
}

/**
 * What validation found in each document on its own, kept while the document is (a watch session
 * validates again only the documents of the files a save changed; the checks across documents
 * keep their own indexes, `CrossChecks`). The objects it returns are shared between runs: nothing
 * may modify them.
 */
export class ValidationMemo {
  private docs = new WeakMap<SourceDoc, Local>();
  /** The options the kept results were found with. */
  private stack: string | undefined;
  private strict = false;
  private readonly scratch = new LocalScratch();

  local(doc: SourceDoc, opts: ValidateOptions): Local {
    if (opts.stack !== this.stack || !!opts.strict !== this.strict) {
      this.stack = opts.stack;
      this.strict = !!opts.strict;
      this.docs = new WeakMap();
    }
    let hit = this.docs.get(doc);
    if (!hit) this.docs.set(doc, (hit = localPasses(doc, opts, this.scratch)));
    return hit;
  }
}

/**
 * Text the service cannot store (U+0000, an unpaired UTF-16 surrogate: PostgreSQL refuses both),
 * anywhere in the document, keys too: YAML's escapes (`"\\0"`, `"\\ud800"`) can write them.
 */
function textPass(doc: SourceDoc, add: Add) {
  if (doc.plainText) return;
  for (const { path, key } of unstorableText(doc.value)) {
    add({ doc, at: [] }, path, 'text', key ? 'a key may not contain U+0000 or an unpaired UTF-16 surrogate' : 'text may not contain U+0000 or an unpaired UTF-16 surrogate (the service cannot store it)', { key });
  }
}

/** Pass 1 and 2: the document is an object of a known kind, and matches that kind's schema. */
function shapePass(doc: SourceDoc, add: Add, errorPaths: (string | number)[][]): ManifestObject | undefined {
  const v = doc.value as Record<string, unknown>;
  if (!v || typeof v !== 'object' || Array.isArray(v)) {
    add({ doc, at: ROOT }, [], 'shape', 'a manifest document must be a mapping with kind and name');
    return undefined;
  }
  // A policy (src/reconciler/policy/) is read where `policies:` of edgeplane.yaml says, and may sit among the manifests.
  if (v.kind === 'Policy') return undefined;
  const kind = kindOfManifest(v.kind);
  if (!kind) {
    const known = manifestKinds().map((k) => k.manifestKind!);
    const hint = typeof v.kind === 'string' ? didYouMean(v.kind, known) : '';
    add({ doc, at: ROOT }, v.kind === undefined ? [] : ['kind'], 'schema', v.kind === undefined ? `kind is required (one of ${known.join(', ')})` : `must be one of ${known.join(', ')}${hint}`);
    return undefined;
  }
  const validate = validatorFor(kind.manifestKind!);
  const valid = validate(v);
  if (!valid) {
    for (const e of relevantErrors(validate.errors ?? [])) {
      schemaProblem({ doc, at: ROOT }, e, add);
      errorPaths.push(instancePath(e));
    }
  }
  return toObject(kind, v, doc, ROOT, valid);
}

/** `parent`, `field`, `prefix`: of a child, its parent, the field it is listed in and `childPrefix` of both. */
function toObject(kind: KindDef, v: Record<string, unknown>, doc: SourceDoc, at: (string | number)[], valid: boolean, parent?: ManifestObject, field?: string, prefix?: string): ManifestObject | undefined {
  if (typeof v.name !== 'string') return undefined;
  const body: Body = {};
  for (const k in v) {
    const x = v[k];
    if (k === 'kind' || k === 'name' || k === 'protect' || k === 'renamed_from' || (kind.embeds && k in kind.embeds)) continue;
    if (x === null && kind.modules?.some((m) => m.name === k)) continue; // `oidc: null` = not configured
    body[k] = x;
  }
  const o: ManifestObject = {
    kind, name: v.name, identity: prefix !== undefined ? prefix + v.name : identityOf(kind, v.name),
    parent, doc, at, body, protect: v.protect === true, previousIdentities: NONE,
    renamedFrom: typeof v.renamed_from === 'string' ? v.renamed_from : undefined, children: NONE, valid,
    refs: undefined, uniques: undefined, secrets: undefined,
  };
  // Renamed, or inside a renamed parent: where the object may still be found. A child renamed with
  // its parent may have either rename applied already (watch applies each save on its own).
  if (o.renamedFrom !== undefined || parent?.previousIdentities.length) {
    const names = o.renamedFrom !== undefined ? [o.renamedFrom, v.name] : [v.name];
    const parents = parent ? [parent.identity, ...parent.previousIdentities] : [undefined];
    const out: string[] = [];
    for (const p of parents) {
      for (const n of names) {
        const id = identityOf(kind, n, p !== undefined && field ? { identity: p, field } : undefined);
        if (id !== o.identity && !out.includes(id)) out.push(id);
      }
    }
    o.previousIdentities = out;
  }
  if (!kind.embeds) return o;
  // The children, in a list of their exact length (kept with the object for the whole plan).
  let room = 0;
  for (const f in kind.embeds) {
    const list = v[f];
    if (Array.isArray(list)) room += list.length;
  }
  const children = (o.children = new Array<ManifestObject>(room));
  let n = 0;
  for (const f in kind.embeds) {
    const list = v[f];
    if (!Array.isArray(list)) continue;
    const childKind = kindByName(kind.embeds[f]);
    const prefix = childPrefix(o.identity, f);
    for (let i = 0; i < list.length; i++) {
      const c = list[i];
      if (!c || typeof c !== 'object') continue;
      const child = toObject(childKind, c as Record<string, unknown>, doc, at === ROOT ? childAt(f, i) : [...at, f, i], valid, o, f, prefix);
      if (child) children[n++] = child;
    }
  }
  children.length = n;
  return o;
}

/** The manifest kind a document names (`kind: HTTPSEdge`), if it is one. */
let manifestKindsByName: Map<unknown, KindDef> | undefined;
function kindOfManifest(name: unknown): KindDef | undefined {
  manifestKindsByName ??= new Map(manifestKinds().map((k) => [k.manifestKind, k]));
  return manifestKindsByName.get(name);
}

/** Where a document's own object sits in it (shared: never modified). */
const ROOT: (string | number)[] = Object.freeze([]) as unknown as (string | number)[];

/** Where a document's child sits (`['routes', 0]`): one array per field and index, shared like `ROOT`. */
const childPaths = new Map<string, (string | number)[][]>();
function childAt(field: string, i: number): (string | number)[] {
  let byIndex = childPaths.get(field);
  if (!byIndex) childPaths.set(field, (byIndex = []));
  return (byIndex[i] ??= [field, i]);
}

/** `if/then` secret fields add a wrapper error; the inner error says what is wrong. */
/**
 * The errors worth a problem each: not the `if` wrappers, and not a type error where an `enum`
 * error on the same value says more (`min_version: 1.3`, a number to YAML, is one problem: the
 * enum's, with a hint to quote it).
 */
function relevantErrors(errors: ErrorObject[]): ErrorObject[] {
  const enums = new Set(errors.filter((e) => e.keyword === 'enum').map((e) => e.instancePath));
  return errors.filter((e) => e.keyword !== 'if' && !(e.keyword === 'type' && enums.has(e.instancePath)));
}

function instancePath(e: ErrorObject): (string | number)[] {
  return e.instancePath.split('/').slice(1).map((p) => {
    const s = p.replace(/~1/g, '/').replace(/~0/g, '~');
    return /^\d+$/.test(s) ? Number(s) : s;
  });
}

function schemaProblem(here: { doc: SourceDoc; at: (string | number)[] }, e: ErrorObject, add: Add) {
  const path = instancePath(e);
  const p = describeAjvError(e);
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'additionalProperties') {
    const field = String(params.additionalProperty);
    // `<<` merges a mapping in YAML 1.1 only; this is YAML 1.2, where it is a key like any other.
    const known = Object.keys(((e.parentSchema as { properties?: object } | undefined)?.properties) ?? {});
    const hint = field === '<<' ? ' (YAML merge keys are YAML 1.1, and manifests are YAML 1.2: write the fields out, or alias a whole value with *name)' : didYouMean(field, known);
    add(here, [...path, field], 'schema', `is not a known field${hint}`, { key: true });
  } else if (e.keyword === 'required') {
    add(here, path, 'schema', `${String(params.missingProperty)} is required`);
  } else {
    const rule = (e.parentSchema as Record<string, unknown> | undefined)?.['x-rule'];
    // A number or boolean whose text is one of the allowed strings: YAML read it unquoted.
    const meant = e.keyword === 'enum' && (typeof e.data === 'number' || typeof e.data === 'boolean')
      ? (params.allowedValues as unknown[] | undefined)?.find((a) => typeof a === 'string' && (a === String(e.data) || (typeof e.data === 'number' && a.trim() !== '' && Number(a) === e.data)))
      : undefined;
    const quote = meant !== undefined ? ` (YAML read it as the ${typeof e.data} ${String(e.data)}: write "${String(meant)}" in quotes)`
      : e.keyword === 'enum' && typeof e.data === 'string' ? didYouMean(e.data, ((params.allowedValues as unknown[] | undefined) ?? []).filter((a): a is string => typeof a === 'string')) : '';
    add(here, path, 'schema', (e.keyword === 'not' && typeof rule === 'string' ? rule : p.rule) + quote);
  }
}

/** A shared empty list (frozen: never added to). */
const NONE: never[] = Object.freeze([]) as unknown as never[];


/** Pass 7: at most one module of an exclusive group (oauth / oidc / saml) per object. */
function exclusivePass(o: ManifestObject, add: Add) {
  let groups: Map<string, string[]> | undefined; // made only for an object with such a module
  const modules = o.kind.modules;
  if (!modules) return;
  for (let i = 0; i < modules.length; i++) {
    const m = modules[i];
    if (m.exclusiveGroup && o.body[m.name]) (groups ??= new Map()).set(m.exclusiveGroup, [...(groups.get(m.exclusiveGroup) ?? []), m.name]);
  }
  if (!groups) return;
  for (const [group, set] of groups) {
    if (set.length < 2) continue;
    const all = (o.kind.modules ?? []).filter((m) => m.exclusiveGroup === group).map((m) => m.name);
    add(o, [set[1]], `exclusive-${group}`, `at most one ${group} module (${all.join(', ')}) may be configured; found ${set.join(', ')}`, { key: true });
  }
}

/** Secret fields of an object: concrete paths (`oidc.client_secret`) and values as written. */
export function secretValues(o: ManifestObject): Hit[] {
  // Manifest objects are asked four times (validation, secrets, desired state): found once each.
  let out = o.secrets;
  if (out) return out;
  out = NONE; // a list is made for an object with a secret only
  const own = o.kind.writeOnly;
  if (own) {
    for (let i = 0; i < own.length; i++) {
      const hits = matchPaths(o.body, own[i]);
      if (hits.length) (out === NONE ? (out = []) : out).push(...hits);
    }
  }
  const modules = o.kind.modules;
  if (modules) {
    for (let i = 0; i < modules.length; i++) {
      const m = modules[i];
      if (!m.writeOnly || !o.body[m.name]) continue;
      for (const w of m.writeOnly) for (const h of matchPaths(o.body[m.name], w)) (out === NONE ? (out = []) : out).push({ path: [m.name, ...h.path], value: h.value });
    }
  }
  return (o.secrets = out);
}

/** Pass 8: secrets come from the environment or a file, not from the manifest. */
function secretPass(o: ManifestObject, add: Add, strict: boolean) {
  const secrets = secretValues(o);
  for (let i = 0; i < secrets.length; i++) {
    const s = secrets[i];
    if (isSecretRef(s.value)) continue;
    add(o, s.path, 'literal-secret', 'a secret is written in the manifest; use {env: NAME} (or {file: path}) so it stays out of Git', { severity: strict ? 'error' : 'warning' });
  }
}

/** Pass 9: the user's metadata plus the ownership marker fits the API's 4096 bytes. */
function metadataPass(o: ManifestObject, add: Add, stack: string) {
  const user = o.body.metadata;
  if (!('metadata' in o.kind.fields)) return;
  const secrets = secretValues(o);
  // A JSON string takes at most 6 bytes per UTF-16 unit (\u escapes); the rest of the encoding is
  // under 200 bytes plus 30 per secret fingerprint. Most objects are far below the limit: only
  // those that might not be are encoded to be measured exactly.
  let chars = stack.length + o.identity.length + (typeof user === 'string' ? user.length : 0);
  for (let i = 0; i < secrets.length; i++) chars += secrets[i].path.join('.').length;
  if (6 * chars + 200 + 30 * secrets.length < METADATA_LIMIT) return;
  const fp = Object.fromEntries(secrets.map((s) => [s.path.join('.'), 'x'.repeat(22)]));
  const size = utf8Bytes(encodeMetadata({ tool: TOOL, v: MARKER_VERSION, stack, id: o.identity, fp, protect: o.protect }, typeof user === 'string' ? user : undefined));
  if (size > METADATA_LIMIT) {
    const room = METADATA_LIMIT - (size - (typeof user === 'string' ? utf8Bytes(JSON.stringify(user)) - 2 : 0));
    add(o, ['metadata'], 'metadata-size', `with the ownership marker the stored metadata would be ${size} bytes, over the API's ${METADATA_LIMIT}; keep this metadata under about ${Math.max(0, room)} bytes`);
  }
}

/**
 * Pass 10: the rules the service checks beyond the schema on every write (`check` of the kind and
 * of each module), worded as the service words them, at the field they name. The rules that need
 * the stored object — a secret the manifest leaves out may be carried over from it — are left to
 * the service: without `stored` the checks skip them.
 */
function checkPass(o: ManifestObject, add: Add, errorPaths: (string | number)[][]) {
  let ctx: CheckContext | undefined; // made only for an object something checks (most have no module to check)
  // Checks are written for bodies the schema accepts: each runs only where no schema error is.
  // A module's check reads the module alone; the kind's reads the plain fields. (Most documents
  // have no schema error: then nothing is listed per object.)
  const depth = o.at.length;
  const mine = errorPaths.length ? errorPaths.filter((p) => startsWith(p, o.at)) : NONE;
  const modules = o.kind.modules;
  if (o.kind.hooks?.check && !(mine.length && plainFault(o.kind, mine, depth))) o.kind.hooks.check(o.body, (ctx ??= new ReportTo(o, add)));
  if (!modules) return;
  for (let i = 0; i < modules.length; i++) {
    const m = modules[i];
    const given = o.body[m.name];
    if (m.check && given && typeof given === 'object' && !(mine.length && faultIn(mine, depth, m.name))) m.check(moduleCheckForm(m, given as Body), (ctx ??= new ReportTo(o, add)));
  }
}

/** Whether a schema error of an object (`mine`, paths into the document) is in `field`, at `depth` of the paths. */
function faultIn(mine: (string | number)[][], depth: number, field: string): boolean {
  return mine.some((p) => p[depth] === field);
}

/** Whether a schema error of an object is in its plain fields (not in a module or an embedded child). */
function plainFault(kind: KindDef, mine: (string | number)[][], depth: number): boolean {
  return mine.some((p) => {
    if (p.length === depth) return true;
    const field = String(p[depth]);
    return !(kind.modules?.some((m) => m.name === field) || (kind.embeds && field in kind.embeds));
  });
}

function startsWith(path: (string | number)[], prefix: (string | number)[]): boolean {
  return prefix.length <= path.length && prefix.every((seg, i) => path[i] === seg);
}

/** A check's reports as validation problems of `o`. */
class ReportTo implements CheckContext {
  constructor(private readonly o: ManifestObject, private readonly add: Add) {}
  report(path: (string | number)[], rule: string, x: { at?: (string | number)[]; key?: boolean } = {}) {
    this.add(this.o, x.at ?? path, 'service-check', rule, { key: x.key });
  }
}
