import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Ajv, ErrorObject } from 'ajv';
import { formatPath, unstorableText } from '../util/text.js';
import { ApiError } from './errors.js';

/**
 * The `ajv` library, loaded the first time a schema is compiled. The validators in use are
 * precompiled (`npm run schemas`): a reconciler command that compiles nothing does not pay for
 * loading it.
 */
let ajvLib: typeof import('ajv') | undefined;
function loadAjv(): typeof import('ajv') {
  return (ajvLib ??= createRequire(import.meta.url)('ajv') as typeof import('ajv'));
}

/**
 * How every Ajv instance is made: the service validates requests with one and the reconciler
 * validates manifests with one, so a rule is written once. `maxBytes` counts UTF-8 bytes (the API's limits
 * are bytes, `maxLength` counts characters); `x-rule` is the human wording of a pattern
 * or of a forbidden field (`not: {}`).
 */
export function createAjv(opts: { allErrors?: boolean; /** emit standalone code: an ES module, or CommonJS */ standalone?: 'esm' | 'cjs' } = {}): Ajv {
  const { Ajv, _ } = loadAjv();
  const ajv = new Ajv({
    allErrors: opts.allErrors ?? false, verbose: true, strict: true, coerceTypes: false, useDefaults: false, removeAdditional: false,
    ...(opts.standalone ? { code: { source: true, esm: opts.standalone === 'esm', lines: true } } : {}),
  });
  ajv.addKeyword({
    keyword: 'maxBytes',
    type: 'string',
    schemaType: 'number',
    error: { message: (cxt) => `must be at most ${cxt.schema as number} bytes (UTF-8)` },
    // Inline code rather than a function, so precompiled (standalone) validators carry it too.
    code: (cxt) => cxt.fail(_`Buffer.byteLength(${cxt.data}, "utf8") > ${cxt.schemaCode}`),
  });
  ajv.addKeyword({ keyword: 'x-rule', schemaType: 'string' });
  return ajv;
}

let shared: Ajv | undefined;
/** The instance the service compiles schemas with when no precompiled validator fits (made on first use). */
export function sharedAjv(): Ajv {
  return (shared ??= createAjv());
}

let collecting: Ajv | undefined;
/**
 * The same instance configuration reporting every error instead of the first: manifests are
 * validated with it (a user fixes a whole file at once; an API request stops at one error).
 */
export function collectingAjv(): Ajv {
  return (collecting ??= createAjv({ allErrors: true }));
}

/** What a validator is to its callers: precompiled (ajv standalone code, `npm run schemas`) or compiled now. */
export interface Validator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

/**
 * The key of a schema in a precompiled set: a hash of its JSON. A schema changed since
 * `npm run schemas` has another key, so a stale precompiled validator is never used for it.
 */
export function schemaKey(schema: unknown): string {
  return `s${createHash('sha256').update(JSON.stringify(schema)).digest('hex').slice(0, 24)}`;
}

/** `/backends/0` → `backends[0]`; `/add/X-Foo` → `add.X-Foo`. */
export function fieldPath(instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

export interface FieldProblem { field: string; rule: string; unknownField: boolean }

/** One ajv error as the field it concerns and the rule it breaks, in words a user can act on. */
export function describeAjvError(e: ErrorObject): FieldProblem {
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'additionalProperties') {
    return { field: fieldPath(e.instancePath, String(params.additionalProperty)), rule: 'is not a known field', unknownField: true };
  }
  if (e.keyword === 'required') {
    return { field: fieldPath(e.instancePath, String(params.missingProperty)), rule: 'is required', unknownField: false };
  }
  const custom = (e.parentSchema as Record<string, unknown> | undefined)?.['x-rule'];
  // `x-rule` words a pattern, or a `not: {}` that forbids a field (derived, provider-specific).
  if ((e.keyword === 'pattern' || e.keyword === 'not') && typeof custom === 'string') {
    return { field: fieldPath(e.instancePath), rule: custom, unknownField: false };
  }
  if (e.keyword === 'enum') {
    return { field: fieldPath(e.instancePath), rule: `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`, unknownField: false };
  }
  if (e.keyword === 'type') {
    return { field: fieldPath(e.instancePath), rule: `must be ${String(params.type).replace(',', ' or ')}`, unknownField: false };
  }
  return { field: fieldPath(e.instancePath), rule: e.message ?? e.keyword, unknownField: false };
}

/** The API error of a body that failed its schema: its first problem, named from `within` (a module's body is that field of the object). */
export function schemaError(e: ErrorObject, within?: string): ApiError {
  const p = describeAjvError(e);
  const named = within === undefined ? p : { ...p, field: p.field ? `${within}.${p.field}` : within };
  return new ApiError(p.unknownField ? 'ERR_UNKNOWN_FIELD' : 'ERR_VALIDATION', problemMessage(named));
}

export function problemMessage(p: FieldProblem): string {
  if (p.unknownField) return `unknown field '${p.field}'`;
  return p.field ? `${p.field}: ${p.rule}` : `body ${p.rule}`;
}


/** The path of the first string (value or key) in a parsed body that the database cannot store, or null. */
export function findUnstorableText(value: unknown): string | null {
  const [first] = unstorableText(value, { first: true });
  return first ? formatPath(first.path) : null;
}
