import { moduleInputSchema } from '../../kinds/schemas.js';
import { findKind, KINDS, kindByName } from '../../kinds/registry.js';
import type { JSONSchema, KindDef, ModuleDef, RefDef } from '../../kinds/types.js';

export const MANIFEST_SCHEMA_ID = 'https://edgeplane.dev/schemas/manifest.schema.json';

/** Manifest names: lower-case DNS-label style, so a name never looks like an id (`ca_…`). */
export const NAME_PATTERN = '[a-z0-9](?:[a-z0-9.-]{0,98}[a-z0-9])?';
const NAME: JSONSchema = {
  type: 'string',
  pattern: `^${NAME_PATTERN}$`,
  'x-rule': 'must be lower-case letters, digits, "-" and "." (1-100 characters, starting and ending with a letter or digit)',
  description: 'The identity of this object in Git; unique per kind (routes: per edge).',
};
const ENV_NAME: JSONSchema = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', 'x-rule': 'must be an environment variable name' };

/** A secret given by reference: exactly one of `env` / `fromEnv` (a variable name) or `file`. */
export const SECRET_REF: JSONSchema = {
  type: 'object',
  description: 'A secret, by reference: {env: NAME}, {fromEnv: NAME} or {file: path relative to this manifest}.',
  properties: {
    env: { ...ENV_NAME, description: 'The environment variable that holds the secret when plan and apply run (EDGEPLANE_SECRET_… names are yours; edgeplane\'s own settings are refused).', examples: ['SHOP_OIDC_CLIENT_SECRET'] },
    fromEnv: { ...ENV_NAME, description: 'The same as env.' },
    file: { type: 'string', minLength: 1, description: 'A file that holds the secret, relative to this manifest (one trailing newline is dropped); keep it out of Git.' },
  },
  additionalProperties: false,
  minProperties: 1,
  maxProperties: 1,
};

let topKinds: readonly KindDef[] | undefined;
/** Manifest kinds, top-level ones only (children are nested in their parent): one list, made once (frozen). */
export function manifestKinds(): readonly KindDef[] {
  return (topKinds ??= Object.freeze(KINDS.filter((k) => k.manifestKind && !k.parent)));
}

/** The kind a ref may name by manifest name, or undefined when only raw ids make sense. */
export function namedTarget(r: RefDef): KindDef | undefined {
  const k = findKind(r.kind);
  return k?.manifestKind && r.stored !== false ? k : undefined;
}

function strip(pattern: string): string {
  return pattern.replace(/^\^/, '').replace(/\$$/, '');
}

/** A ref value (or list item): a manifest name of the target kind, or a raw id as the API takes it. */
function nameOrId(idSchema: JSONSchema, target: KindDef): JSONSchema {
  const idPattern = typeof idSchema.pattern === 'string' ? strip(idSchema.pattern) : `${target.idPrefix}_[0-9A-Za-z]{27}`;
  const idRule = typeof idSchema['x-rule'] === 'string' ? (idSchema['x-rule'] as string).replace(/^must be /, '') : `a ${target.title} id`;
  return {
    type: 'string',
    ...(typeof idSchema.description === 'string' ? { description: idSchema.description } : {}),
    pattern: `^(?:${NAME_PATTERN}|${idPattern})$`,
    'x-rule': `must be the name of a ${target.manifestKind} in the manifests, or ${idRule}`,
  };
}

function refSchema(field: JSONSchema, r: RefDef): JSONSchema {
  const target = namedTarget(r);
  if (!target) return field;
  if (r.many) return { ...field, items: nameOrId((field.items as JSONSchema) ?? {}, target) };
  return nameOrId(field, target);
}

/** Applies `fn` to the schema at a dotted path (`*` = every property) of an object schema. */
function mapAt(schema: JSONSchema, segs: string[], fn: (s: JSONSchema) => JSONSchema): JSONSchema {
  if (segs.length === 0) return fn(schema);
  const [head, ...rest] = segs;
  const props = { ...((schema.properties as Record<string, JSONSchema>) ?? {}) };
  for (const key of Object.keys(props)) {
    if (head === '*' || head === key) props[key] = mapAt(props[key], rest, fn);
  }
  return { ...schema, properties: props };
}

/** Secret fields take an env/file reference; a literal still validates as the API would take it. */
function secretField(s: JSONSchema): JSONSchema {
  return { ...(typeof s.description === 'string' ? { description: s.description } : {}), if: { type: 'object' }, then: SECRET_REF, else: s };
}

function withRefsAndSecrets(props: Record<string, JSONSchema>, refs: RefDef[] = [], writeOnly: string[] = []): Record<string, JSONSchema> {
  let obj: JSONSchema = { properties: { ...props } };
  for (const r of refs) {
    const segs = r.field.split('.');
    obj = mapAt(obj, segs, (s) => refSchema(s, r));
  }
  for (const w of writeOnly) obj = mapAt(obj, w.split('.'), secretField);
  return obj.properties as Record<string, JSONSchema>;
}

function moduleSchema(m: ModuleDef): JSONSchema {
  // The module's input schema: its derived fields are named as set by the service, as the API says.
  const props = withRefsAndSecrets((moduleInputSchema(m).properties as Record<string, JSONSchema>) ?? {}, m.refs, m.writeOnly);
  return { ...m.request, type: ['object', 'null'], properties: props };
}

/** The manifest form of a kind: its API request fields (refs by name, secrets by reference) plus identity. */
function objectSchema(kind: KindDef, top: boolean): JSONSchema {
  const properties: Record<string, JSONSchema> = {};
  if (top) properties.kind = { const: kind.manifestKind, description: `The kind of object this document describes: a ${kind.title}.` };
  properties.name = NAME;
  properties.protect = { type: 'boolean', description: 'Never delete this object, even when it leaves the manifests.' };
  properties.renamed_from = { ...NAME, description: 'The name this object had before: the object of that name is kept and renamed, not deleted and created again.' };
  Object.assign(properties, withRefsAndSecrets(kind.fields, kind.refs, kind.writeOnly));
  for (const m of kind.modules ?? []) properties[m.name] = moduleSchema(m);
  for (const [field, child] of Object.entries(kind.embeds ?? {})) {
    properties[field] = { type: 'array', items: { $ref: `#/definitions/${childDefName(kind, field)}` }, description: `${kindByName(child).title}s of this ${kind.title}` };
  }
  return {
    type: 'object',
    properties,
    required: [...(top ? ['kind'] : []), 'name', ...(kind.required ?? [])],
    additionalProperties: false,
  };
}

export function childDefName(parent: KindDef, field: string): string {
  return `${parent.manifestKind}.${field}`;
}

/** A whole field taken from a variable of `edgeplane.yaml` (the editor's schema: substituted before validation). */
export const VAR_REF: JSONSchema = {
  type: 'object',
  description: 'A variable of edgeplane.yaml, {var: NAME}: this field takes its value in the environment chosen with --env, as it is typed (a number stays a number, a list a list). Part of a string is written ${var.NAME}. See docs/manifests.md, "Environments".',
  properties: {
    var: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', 'x-rule': 'must be a variable name', description: 'The name of a variable declared under variables: in edgeplane.yaml.' },
  },
  required: ['var'],
  additionalProperties: false,
};
const VAR_IF: JSONSchema = { type: 'object', properties: { var: true }, required: ['var'] };
/** Where the editor's schema defines `VAR_REF` once (each field refers to it). */
const VAR_DEF = 'variable';

/** A value position that may be `{var: NAME}`: the variable when the value is a mapping with `var`, else `s`. */
function orVariable(s: JSONSchema): JSONSchema {
  const inner = withVariables(s);
  return { ...(typeof s.description === 'string' ? { description: s.description } : {}), if: VAR_IF, then: { $ref: `#/definitions/${VAR_DEF}` }, else: inner };
}

/**
 * `s` with every value inside it (properties, list items, map values, the branches of a
 * condition) allowed to be `{var: NAME}`; `kind` stays as it is (it chooses the schema), and so
 * do secret references (the mapping written in place of a secret).
 */
function withVariables(s: JSONSchema): JSONSchema {
  if (s === SECRET_REF) return s;
  const out: JSONSchema = { ...s };
  if (s.properties && typeof s.properties === 'object') {
    out.properties = Object.fromEntries(Object.entries(s.properties as Record<string, JSONSchema>).map(([k, p]) => [k, k === 'kind' ? p : orVariable(p)]));
  }
  if (s.items && typeof s.items === 'object' && !Array.isArray(s.items)) out.items = orVariable(s.items as JSONSchema);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') out.additionalProperties = orVariable(s.additionalProperties as JSONSchema);
  for (const k of ['then', 'else'] as const) if (s[k] && typeof s[k] === 'object') out[k] = withVariables(s[k] as JSONSchema);
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) if (Array.isArray(s[k])) out[k] = (s[k] as JSONSchema[]).map(withVariables);
  return out;
}

/**
 * The manifest JSON Schema, composed from the very schemas the API validates requests with
 * (`KindDef.fields`, `ModuleDef.request`). `npm run schemas` writes it to `schemas/`; a test
 * fails when the committed file is stale.
 *
 * `variables`: the schema an editor reads (`schemas/manifest.schema.json`), where any field may
 * be `{var: NAME}`. Validation runs on documents whose variables were substituted, with the
 * strict schema (no `variables`): a `{var: NAME}` still there (an unknown variable, or one with
 * no value) is an error there too.
 */
export function buildManifestSchema(opts: { variables?: boolean } = {}): JSONSchema {
  const definitions: Record<string, JSONSchema> = {};
  const kinds = manifestKinds();
  const form = opts.variables ? withVariables : (s: JSONSchema) => s;
  for (const k of kinds) {
    definitions[k.manifestKind!] = form(objectSchema(k, true));
    for (const [field, child] of Object.entries(k.embeds ?? {})) definitions[childDefName(k, field)] = form(objectSchema(kindByName(child), false));
  }
  if (opts.variables) definitions[VAR_DEF] = VAR_REF;
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: MANIFEST_SCHEMA_ID,
    title: 'edgeplane manifest',
    description: 'One document of an edgeplane manifest file. Generated by `npm run schemas` from src/kinds; do not edit.',
    type: 'object',
    required: ['kind'],
    properties: { kind: { enum: kinds.map((k) => k.manifestKind), description: 'The kind of object this document describes.' } },
    allOf: kinds.map((k) => ({
      if: { properties: { kind: { const: k.manifestKind } }, required: ['kind'] },
      then: { $ref: `#/definitions/${k.manifestKind}` },
    })),
    definitions,
  };
}
