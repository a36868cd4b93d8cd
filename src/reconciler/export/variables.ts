import { isDeepStrictEqual } from 'node:util';
import { stringify } from 'yaml';
import { stackLine } from '../manifests/config.js';
import { didYouMean } from '../../util/suggest.js';
import { manifestKinds } from '../manifests/schema.js';
import { escapeText, isVarRef } from '../manifests/variables.js';
import { isSecretToken } from '../plan/tokens.js';

/**
 * Export writing values back as variables (docs/manifests.md, "Environments: exporting"):
 * `--as-variable FIELD=NAME` turns the value at FIELD into `{var: NAME}` (or, where the
 * environment's value of NAME is part of a string there, that part into `${var.NAME}`), and
 * `--env NAME` writes each of that environment's values back wherever a string holds it. Reading
 * the files back with the variables' values gives exactly the exported desired state: every
 * other `${` is escaped as export always does.
 */

/** One `--as-variable [Kind[/name].]field[.field…]=NAME`. */
export interface AsVariable {
  /** As the user wrote it (for messages). */
  spec: string;
  kind?: string;
  name?: string;
  path: string[];
  variable: string;
  /** `FIELD=NAME=VALUE`: the variable's value, given (the part of each string at FIELD that is VALUE becomes `${var.NAME}`). */
  value?: string;
}

/** A variable the export wrote: new (its value taken from the live objects) or the environment's. */
export interface ExportedVariable {
  name: string;
  type: string;
  value: unknown;
  /** Not declared (or with no value in the environment) before: to add to edgeplane.yaml. */
  isNew: boolean;
  /** Places in the manifests that refer to it. */
  uses: number;
}

/** A `--as-variable` the live objects cannot satisfy (a field nowhere, objects that disagree): exit 1. */
export class AsVariableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AsVariableError';
  }
}

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const FIELD = /^[a-z_][a-z0-9_]*$/;

/**
 * Parses one `--as-variable`: `FIELD=NAME` (`hostports=domain`, `HTTPSEdge.hostports=domain`,
 * `HTTPSEdge/web.description=title`, `routes.match=prefix`) or `FIELD=NAME=VALUE`
 * (`hostports=domain=shop.example.com`).
 */
export function parseAsVariable(spec: string): AsVariable {
  const eq = spec.indexOf('=');
  const usage = 'write FIELD=NAME or FIELD=NAME=VALUE: a field path ([Kind[/name].]field[.field…], e.g. hostports or HTTPSEdge/web.hostports), a variable name, and optionally its value (the part of the field it stands for)';
  const rest = eq < 0 ? '' : spec.slice(eq + 1);
  const eq2 = rest.indexOf('=');
  const variable = eq2 < 0 ? rest : rest.slice(0, eq2);
  const value = eq2 < 0 ? undefined : rest.slice(eq2 + 1);
  if (eq <= 0 || !variable || value === '') throw new AsVariableError(`--as-variable ${spec}: ${usage}`);
  if (!VAR_NAME.test(variable)) throw new AsVariableError(`--as-variable ${spec}: ${JSON.stringify(variable)} is not a variable name (letters, digits and "_", not starting with a digit)`);
  if (value !== undefined && !textValue(value)) throw new AsVariableError(`--as-variable ${spec}: a value given is text of at least 4 characters without $, { or } (the part of a string the variable stands for)`);
  const segs = spec.slice(0, eq).split('.');
  let kind: string | undefined;
  let name: string | undefined;
  if (/^[A-Z]/.test(segs[0])) {
    const [k, n] = segs.shift()!.split('/', 2);
    const kinds = manifestKinds().map((x) => x.manifestKind!);
    if (!kinds.includes(k)) throw new AsVariableError(`--as-variable ${spec}: no kind ${k}${didYouMean(k, kinds)}; the kinds are ${kinds.join(', ')}`);
    kind = k;
    name = n;
  }
  // After the first, a segment may be a key of a map (a header name: x-served-by).
  if (!segs.length || !FIELD.test(segs[0]) || !segs.every((s) => /^[A-Za-z0-9_-]+$/.test(s))) throw new AsVariableError(`--as-variable ${spec}: ${usage}`);
  if (segs[segs.length - 1] === 'name' || segs[0] === 'kind') throw new AsVariableError(`--as-variable ${spec}: names are identities (the same in every environment), not variables`);
  const known = new Set(manifestKinds().filter((x) => !kind || x.manifestKind === kind).flatMap((x) => [...Object.keys(x.fields), ...(x.modules ?? []).map((m) => m.name), ...Object.keys(x.embeds ?? {})]));
  if (!known.has(segs[0])) {
    const k = kind ? `${kind} has no field` : 'no kind has a field';
    throw new AsVariableError(`--as-variable ${spec}: ${k} ${segs[0]}${didYouMean(segs[0], [...known])}`);
  }
  return { spec, kind, name, path: segs, variable, ...(value !== undefined ? { value } : {}) };
}

/** The variable type of a value (`list(string)` …), or undefined for one no variable can hold. */
export function variableType(v: unknown): string | undefined {
  const scalar = (x: unknown) => (typeof x === 'string' ? 'string' : typeof x === 'number' && Number.isFinite(x) ? 'number' : typeof x === 'boolean' ? 'boolean' : undefined);
  if (!Array.isArray(v)) return scalar(v);
  const types = new Set(v.map(scalar));
  // An empty list is a list of strings (what hostports and most lists hold).
  if (!types.size) return 'list(string)';
  const [t] = types;
  return types.size === 1 && t ? `list(${t})` : undefined;
}

/** A value written back inside strings: text long enough not to match by chance, with nothing `${` escaping could cut. */
function textValue(v: unknown): v is string {
  return typeof v === 'string' && v.length >= 4 && !/[${}]/.test(v);
}

type Json = unknown;
const isMapping = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
/** A secret as export writes it, `{env: NAME}`: a reference, never a place for a variable. */
const isSecretRef = (v: unknown): boolean => isMapping(v) && Object.keys(v).length === 1 && ('env' in v || 'fromEnv' in v || 'file' in v);

export interface WriteBackOptions {
  asVariables: AsVariable[];
  /** The values of the environment exported for (`--env`), by variable name. */
  values?: ReadonlyMap<string, unknown>;
  /** Write every text value of `values` back wherever a string holds it (`--env`), not only at the `--as-variable` fields. */
  implicit?: boolean;
}

/** Documents as export builds them (`kind`, `name`, fields; routes nested), before escaping. */
export interface WriteBackResult { docs: Json[]; variables: ExportedVariable[]; warnings: string[] }

interface Site { holder: Record<string | number, unknown>; key: string | number; doc: string }

/**
 * The documents with values written back as variables, and every `${` of the rest escaped (the
 * result is what a manifest file holds: `escapeText` is not to be applied again).
 */
export function writeBackVariables(docs: Json[], opts: WriteBackOptions): WriteBackResult {
  const values = opts.values ?? new Map<string, unknown>();
  const warnings: string[] = [];
  const uses = new Map<string, number>();
  const fresh = new Map<string, unknown>();
  const use = (n: string) => uses.set(n, (uses.get(n) ?? 0) + 1);
  // Raw (unescaped) copies are worked on; a string written with a variable is kept aside and put back after escaping.
  const out = docs.map((d) => structuredClone(d)) as Record<string, unknown>[];
  const templated = new Map<string, string>(); // placeholder token → template text
  let seq = 0;
  const token = (text: string) => {
    const t = `\u0000ep-var-${seq++}\u0000`;
    templated.set(t, text);
    return t;
  };
  /** `s` with each text value of `pairs` (longest first) as `${var.NAME}`, the rest escaped; undefined when none occurs. */
  const substitute = (s: string, pairs: [string, string][]): string | undefined => {
    if (!pairs.length) return undefined;
    const sorted = [...pairs].sort((a, b) => b[1].length - a[1].length);
    const re = new RegExp(sorted.map(([, v]) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
    let text = '';
    let last = 0;
    let hit = false;
    for (const m of s.matchAll(re)) {
      // After a `$` the placeholder would read as a literal `$${`: that occurrence stays text.
      if (m.index! > 0 && s[m.index! - 1] === '$') continue;
      const name = sorted.find(([, v]) => v === m[0])![0];
      text += escapeText(s.slice(last, m.index)) + `\${var.${name}}`;
      last = m.index! + m[0].length;
      hit = true;
      use(name);
    }
    return hit ? text + escapeText(s.slice(last)) : undefined;
  };

  // Names are identities, the same in every environment, and so is a reference to one (export
  // writes references by name): a string that is an exported object's name stays as it is.
  const names = new Set<string>();
  const collectNames = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(collectNames);
    else if (isMapping(v)) for (const [k, x] of Object.entries(v)) k === 'name' && typeof x === 'string' ? names.add(x) : collectNames(x);
  };
  out.forEach(collectNames);

  // 1. The --as-variable fields: where each sits, in every document of its kind (and name).
  const sites = new Map<AsVariable, Site[]>();
  for (const spec of opts.asVariables) {
    const found: Site[] = [];
    for (const d of out) {
      if (spec.kind && d.kind !== spec.kind) continue;
      if (spec.name && d.name !== spec.name) continue;
      const identity = `${String(d.kind)}/${String(d.name)}`;
      const walk = (holder: Record<string | number, unknown>, i: number, at: string) => {
        const key = spec.path[i];
        if (!(key in holder)) return;
        const v = holder[key];
        if (i === spec.path.length - 1) {
          if (!isSecretToken(v) && !isSecretRef(v) && !isVarRef(v)) found.push({ holder, key, doc: `${at}${key}` });
          return;
        }
        if (Array.isArray(v)) v.forEach((x, j) => isMapping(x) && walk(x, i + 1, `${at}${key}[${typeof x.name === 'string' ? x.name : j}].`));
        else if (isMapping(v)) walk(v, i + 1, `${at}${key}.`);
      };
      walk(d, 0, `${identity} `);
    }
    if (!found.length) warnings.push(`--as-variable ${spec.spec}: no exported object has ${spec.path.join('.')}${spec.kind ? ` (${spec.kind}${spec.name ? `/${spec.name}` : ''})` : ''}; nothing written as ${spec.variable}`);
    sites.set(spec, found);
  }
  for (const [spec, found] of sites) {
    if (!found.length) continue;
    const n = spec.variable;
    if (spec.value !== undefined && values.has(n) && values.get(n) !== spec.value) {
      throw new AsVariableError(`--as-variable ${spec.spec}: ${n} is ${JSON.stringify(values.get(n))} in this environment, not ${JSON.stringify(spec.value)}`);
    }
    if (spec.value !== undefined) {
      const prior = fresh.get(n);
      if (fresh.has(n) && prior !== spec.value) throw new AsVariableError(`--as-variable ${spec.spec}: ${n} is given ${JSON.stringify(prior)} by another --as-variable: one variable, one value`);
      if (!values.has(n)) fresh.set(n, spec.value);
    }
    if (spec.value !== undefined || values.has(n)) {
      // The value given, or the environment's: the whole field where it equals it, else the part of each string that holds it.
      const value = spec.value ?? values.get(n);
      for (const s of found) {
        const v = s.holder[s.key];
        if (typeof v === 'string' && names.has(v)) {
          warnings.push(`--as-variable ${spec.spec}: ${s.doc} refers to ${JSON.stringify(v)} by name, and names are the same in every environment; written as it is`);
          continue;
        }
        if (isDeepStrictEqual(v, value)) {
          s.holder[s.key] = { var: n };
          use(n);
          continue;
        }
        const parts = textValue(value) ? [[n, value] as [string, string]] : [];
        let hit = false;
        if (typeof v === 'string') {
          const t = substitute(v, parts);
          if (t !== undefined) { s.holder[s.key] = token(t); hit = true; }
        } else if (Array.isArray(v)) {
          v.forEach((x, j) => {
            const t = typeof x === 'string' && !names.has(x) ? substitute(x, parts) : undefined;
            if (t !== undefined) { v[j] = token(t); hit = true; }
          });
        }
        if (!hit) warnings.push(`--as-variable ${spec.spec}: ${s.doc} is ${JSON.stringify(v)}, which neither is nor holds ${n}'s value ${JSON.stringify(value)}; written as it is`);
      }
      continue;
    }
    // A new variable: one value, the field's, the same in every object it is taken from.
    const distinct: { value: unknown; docs: string[] }[] = [];
    for (const s of found) {
      const v = s.holder[s.key];
      const hit = distinct.find((x) => isDeepStrictEqual(x.value, v));
      if (hit) hit.docs.push(s.doc);
      else distinct.push({ value: v, docs: [s.doc] });
    }
    if (distinct.length > 1) {
      const shown = distinct.slice(0, 3).map((x) => `${x.docs[0]} is ${JSON.stringify(x.value)}`).join(', ');
      throw new AsVariableError(`--as-variable ${spec.spec}: the objects differ (${shown}${distinct.length > 3 ? ', …' : ''}), and a variable has one value per environment: name one object (--as-variable ${found[0].doc.split(' ')[0]}.${spec.path.join('.')}=${n}), or declare ${n} in edgeplane.yaml with the part they share and export with --env`);
    }
    const value = distinct[0].value;
    const prior = fresh.get(n);
    if (fresh.has(n) && !isDeepStrictEqual(prior, value)) throw new AsVariableError(`--as-variable ${spec.spec}: ${n} is given ${JSON.stringify(prior)} by another --as-variable, and ${JSON.stringify(value)} here: one variable, one value`);
    if (!variableType(value)) throw new AsVariableError(`--as-variable ${spec.spec}: ${found[0].doc} is ${JSON.stringify(value)}; a variable holds a string, number, boolean or a list of one of them`);
    fresh.set(n, value);
    for (const s of found) {
      s.holder[s.key] = { var: n };
      use(n);
    }
  }

  // 2. --env: each text value of the environment wherever a string holds it (names and kinds are identities: never).
  if (opts.implicit) {
    const pairs = [...values].filter((p): p is [string, string] => textValue(p[1]));
    const lists = [...values].filter(([, v]) => Array.isArray(v) && v.length > 0);
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') {
        if (templated.has(v) || names.has(v)) return v;
        const t = substitute(v, pairs);
        return t === undefined ? v : token(t);
      }
      if (Array.isArray(v)) {
        const whole = lists.find(([, l]) => isDeepStrictEqual(l, v));
        if (whole) {
          use(whole[0]);
          return { var: whole[0] };
        }
        return v.map(walk);
      }
      if (!isMapping(v) || isVarRef(v) || isSecretToken(v) || isSecretRef(v)) return v;
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) o[k] = k === 'name' || k === 'kind' ? x : walk(x);
      return o;
    };
    for (let i = 0; i < out.length; i++) out[i] = walk(out[i]) as Record<string, unknown>;
  }

  // 3. Escaped as export writes every value; the strings written with variables put back as they are.
  const finish = (v: unknown): unknown => {
    if (typeof v === 'string') return templated.get(v) ?? escapeText(v);
    if (Array.isArray(v)) return v.map(finish);
    if (!isMapping(v) || isVarRef(v)) return v;
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) o[k] = finish(x);
    return o;
  };
  const variables: ExportedVariable[] = [];
  for (const [name, n] of [...uses].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const isNew = fresh.has(name);
    const value = isNew ? fresh.get(name) : values.get(name);
    variables.push({ name, type: variableType(value) ?? 'string', value, isNew, uses: n });
  }
  return { docs: out.map(finish), variables, warnings };
}

/**
 * The `edgeplane.yaml` an export writes into a new directory: the stack, and the variables the
 * manifests refer to; for an environment (`--env`), as that environment (its stack name and
 * values, `base` the file's stack), else with the values as defaults. Planned from there, the
 * manifests give back the exported desired state.
 */
export function freshStackFile(stack: string, environment: { name: string; base?: string } | undefined, variables: ExportedVariable[]): string {
  if (!variables.length) return `${stackLine(stack)}\n`;
  const file: Record<string, unknown> = environment
    ? {
      stack: environment.base ?? stack,
      variables: Object.fromEntries(variables.map((v) => [v.name, { type: v.type }])),
      environments: { [environment.name]: { stack, values: Object.fromEntries(variables.map((v) => [v.name, v.value])) } },
    }
    : { stack, variables: Object.fromEntries(variables.map((v) => [v.name, { type: v.type, default: v.value }])) };
  return stringify(file, { lineWidth: 0 });
}
