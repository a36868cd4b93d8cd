import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { ErrorObject } from 'ajv';
import { collectingAjv, describeAjvError, schemaKey, type Validator } from '../../contract/validation.js';
import * as generated from '../../generated/manifest-validators.js';
import { displayPath } from '../../util/display-path.js';
import { didYouMean } from '../../util/suggest.js';
import { CONFIG_FILES, manifestFiles, parseSource, readManifest, type SourceDoc } from '../manifests/load.js';
import type { Position, Problem } from '../manifests/problems.js';
import { selector } from '../plan/selectors.js';
import { compile, isCompileError, type Compiled } from './cel.js';
import { positionInValue } from './positions.js';
import { buildPolicySchema } from './schema.js';
import type { Policy, PolicyRule, PolicySet, Severity } from './types.js';

export interface LoadedPolicies { set: PolicySet; problems: Problem[] }

export const NO_POLICIES: PolicySet = Object.freeze({ policies: [], files: [] }) as unknown as PolicySet;

/**
 * The policies of the stack whose manifests are in `root`: the files and folders `policies:` of
 * its edgeplane.yaml names, relative to it. No stack file, or none naming policies: none.
 * Every problem has its place: a path that is not there at its entry in edgeplane.yaml, a schema
 * or CEL error at its line and column in the policy file.
 */
export function loadStackPolicies(root: string, cwd = process.cwd()): LoadedPolicies {
  const dir = existsSync(root) && statSync(root).isFile() ? dirname(root) : root;
  const stackFile = CONFIG_FILES.map((n) => resolve(dir, n)).find((p) => existsSync(p));
  if (!stackFile) return { set: NO_POLICIES, problems: [] };
  const text = readFileSync(stackFile, 'utf8');
  const parsed = parseSource(displayPath(stackFile, cwd), text);
  const doc = parsed.docs[0];
  const entries = (doc?.value as { policies?: unknown } | undefined)?.policies;
  if (!Array.isArray(entries)) return { set: NO_POLICIES, problems: [] }; // absent, or wrong: the stack file's own check says so
  const problems: Problem[] = [];
  const files: string[] = [];
  entries.forEach((entry, i) => {
    if (typeof entry !== 'string') return;
    const path = resolve(dirname(stackFile), entry);
    try {
      for (const f of manifestFiles(path)) if (!files.includes(f)) files.push(f);
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? `${entry} is not there (${displayPath(path, cwd)})` : (err as Error).message;
      problems.push({ ...doc!.locate(['policies', i]), severity: 'error', path: `policies[${i}]`, rule: 'policy-path', message: `${why}: name a folder or a file of policies, relative to edgeplane.yaml` });
    }
  });
  const loaded = loadPolicyFiles(files, cwd);
  return { set: loaded.set, problems: [...problems, ...loaded.problems] };
}

/**
 * The stack file of `root` and the policy files and folders its `policies:` names (absolute; there
 * or not): what watch looks at besides the manifests.
 */
export function policyPaths(root: string): { stackFile?: string; paths: string[] } {
  const dir = existsSync(root) && statSync(root).isFile() ? dirname(root) : root;
  const stackFile = CONFIG_FILES.map((n) => resolve(dir, n)).find((p) => existsSync(p));
  if (!stackFile) return { paths: [] };
  let entries: unknown;
  try {
    entries = (parseSource(stackFile, readFileSync(stackFile, 'utf8')).docs[0]?.value as { policies?: unknown } | undefined)?.policies;
  } catch {
    return { stackFile, paths: [] };
  }
  const paths = Array.isArray(entries) ? entries.filter((e): e is string => typeof e === 'string').map((e) => resolve(dirname(stackFile), e)) : [];
  return { stackFile, paths };
}

/**
 * What the stack's policies are read from, as one string to compare: the stack file's text and
 * each policy file's path and text. Watch loads the policies again, and plans every object, when
 * it differs from the last run's (a policy saved, or `policies:` changed, with no manifest saved).
 */
export function policySignature(root: string): string {
  const { stackFile, paths } = policyPaths(root);
  if (!stackFile) return '';
  const parts: string[] = [];
  const read = (f: string) => {
    try {
      parts.push(f, readFileSync(f, 'utf8'));
    } catch (err) {
      parts.push(f, `(${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`);
    }
  };
  read(stackFile);
  for (const p of paths) {
    let files: string[];
    try {
      files = manifestFiles(p);
    } catch (err) {
      parts.push(p, `(${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`);
      continue;
    }
    for (const f of files) read(f);
  }
  return parts.join('\0');
}

/** Every `kind: Policy` document of these files, checked against the schema and compiled. */
export function loadPolicyFiles(files: string[], cwd = process.cwd()): LoadedPolicies {
  const problems: Problem[] = [];
  const policies: Policy[] = [];
  const names = new Map<string, SourceDoc>();
  for (const file of files) {
    const bytes = readFileSync(file);
    const read = readManifest(file, cwd, bytes);
    problems.push(...read.problems);
    const text = bytes.toString('utf8');
    for (const doc of read.docs) {
      const p = policyOf(doc, text, problems);
      if (!p) continue;
      const first = names.get(p.name)?.locate([]);
      if (first) {
        problems.push({ ...doc.locate(['name']), severity: 'error', path: 'name', rule: 'policy-name', message: `policy "${p.name}" is defined twice (first at ${first.file}:${first.line}:${first.col}): names must be unique, --override-policy names one` });
        continue;
      }
      names.set(p.name, doc);
      policies.push(p);
    }
  }
  return { set: { policies, files }, problems };
}

let validator: Validator | undefined;
/**
 * The policy schema's validator: precompiled by `npm run schemas` (src/generated/), or compiled
 * now when the schema changed since (a test fails until the precompiled one is written again).
 */
function policyValidator(): Validator {
  if (validator) return validator;
  const schema = buildPolicySchema();
  return (validator = generated.POLICY_KEY === schemaKey(schema) ? generated.Policy as unknown as Validator : collectingAjv().compile(schema) as Validator);
}

interface RawRule { expression: string; message: string; severity?: Severity }
interface RawPolicy {
  kind: 'Policy'; name: string; description?: string; overridable?: boolean;
  match?: { kinds?: string[]; selectors?: string[]; condition?: string };
  rules: RawRule[];
  examples?: { pass?: unknown[]; fail?: unknown[] };
}

/** One document as a policy, or undefined with its problems added. */
function policyOf(doc: SourceDoc, text: string, problems: Problem[]): Policy | undefined {
  const v = doc.value;
  const add = (path: (string | number)[], rule: string, message: string, key = false, at?: Position) =>
    problems.push({ ...(at ?? doc.locate(path, { key })), severity: 'error', path: formatPath(path), rule, message });
  if (!v || typeof v !== 'object' || Array.isArray(v) || (v as { kind?: unknown }).kind !== 'Policy') {
    const kind = v && typeof v === 'object' && !Array.isArray(v) ? (v as { kind?: unknown }).kind : undefined;
    add(kind === undefined ? [] : ['kind'], 'policy-file', `a policy file holds kind: Policy documents only${typeof kind === 'string' ? `, not ${kind}${didYouMean(kind, ['Policy'])}` : ''} (manifests go in the stack's other files)`);
    return undefined;
  }
  const validate = policyValidator();
  if (!validate(v)) {
    for (const e of relevant(validate.errors ?? [])) schemaProblem(e, add);
    return undefined;
  }
  const raw = v as RawPolicy;
  let failed = false;
  const compiled = (path: (string | number)[], expression: string): Compiled | undefined => {
    const c = compile(expression, 'bool');
    if (!isCompileError(c)) return c;
    failed = true;
    add(path, 'policy-cel', c.message, false, positionInValue(text, doc.locate(path), expression, c.offset));
    return undefined;
  };
  const condition = raw.match?.condition !== undefined ? compiled(['match', 'condition'], raw.match.condition) : undefined;
  const rules: PolicyRule[] = [];
  raw.rules.forEach((r, index) => {
    const c = compiled(['rules', index, 'expression'], r.expression);
    if (c) rules.push({ index, expression: r.expression, message: r.message, severity: r.severity ?? 'deny', compiled: c });
  });
  if (failed) return undefined;
  const kinds = raw.match?.kinds ? new Set(raw.match.kinds) : undefined;
  const selectors = raw.match?.selectors?.map(selector);
  return {
    name: raw.name,
    ...(raw.description !== undefined ? { description: raw.description } : {}),
    overridable: raw.overridable ?? true,
    ...(kinds ? { kinds } : {}),
    ...(selectors ? { selectors } : {}),
    ...(condition ? { condition } : {}),
    rules,
    planLevel: !kinds && !selectors && (!condition || condition.planOnly) && rules.every((r) => r.compiled.planOnly),
    doc,
    examples: { pass: raw.examples?.pass ?? [], fail: raw.examples?.fail ?? [] },
  };
}

function relevant(errors: ErrorObject[]): ErrorObject[] {
  const enums = new Set(errors.filter((e) => e.keyword === 'enum' || e.keyword === 'const').map((e) => e.instancePath));
  return errors.filter((e) => e.keyword !== 'if' && !(e.keyword === 'type' && enums.has(e.instancePath)));
}

function schemaProblem(e: ErrorObject, add: (path: (string | number)[], rule: string, message: string, key?: boolean) => void): void {
  const path = e.instancePath.split('/').slice(1).map((p) => {
    const s = p.replace(/~1/g, '/').replace(/~0/g, '~');
    return /^\d+$/.test(s) ? Number(s) : s;
  });
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'additionalProperties') {
    const field = String(params.additionalProperty);
    const known = Object.keys(((e.parentSchema as { properties?: object } | undefined)?.properties) ?? {});
    add([...path, field], 'policy-schema', `is not a field of a policy here${didYouMean(field, known)} (known: ${known.join(', ')})`, true);
  } else if (e.keyword === 'required') {
    add(path, 'policy-schema', `${String(params.missingProperty)} is required`);
  } else if (e.keyword === 'enum' && typeof e.data === 'string') {
    const allowed = (params.allowedValues as unknown[]).map(String);
    add(path, 'policy-schema', `must be one of ${allowed.join(', ')}${didYouMean(e.data, allowed)}`);
  } else if (e.keyword === 'const') {
    add(path, 'policy-schema', `must be ${JSON.stringify(params.allowedValue)}`);
  } else {
    add(path, 'policy-schema', describeAjvError(e).rule);
  }
}

function formatPath(path: (string | number)[]): string {
  return path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

/**
 * `kind: Policy` documents among the manifests that no entry of `policies:` reaches: checked by
 * nothing, which their authors would not guess (a warning at each).
 */
export function strayPolicies(docs: readonly SourceDoc[], set: PolicySet, cwd = process.cwd()): Problem[] {
  const read = new Set(set.files.map((f) => resolve(f)));
  const out: Problem[] = [];
  for (const d of docs) {
    if ((d.value as { kind?: unknown } | null)?.kind !== 'Policy' || read.has(resolve(cwd, d.file))) continue;
    out.push({ ...d.locate([]), severity: 'warning', path: '', rule: 'policy-path', message: 'this Policy is not checked: `policies:` of edgeplane.yaml names neither this file nor a folder holding it' });
  }
  return out;
}
