import { createRequire } from 'node:module';
import type { Environment, ParseResult } from '@marcbachmann/cel-js';
import { compileFast, type ObjectSource } from './fast.js';

let celLib: typeof import('@marcbachmann/cel-js') | undefined;
/**
 * The CEL library, loaded the first time a policy is compiled: a stack without policies does not
 * pay for it (about 50 ms). An ES module, loaded with `require` (Node 20.19 and later load ES
 * modules that way, synchronously, as the loader needs).
 */
function cel(): typeof import('@marcbachmann/cel-js') {
  return (celLib ??= createRequire(import.meta.url)('@marcbachmann/cel-js') as typeof import('@marcbachmann/cel-js'));
}

/**
 * The CEL environments policy expressions are compiled in (@marcbachmann/cel-js: type-checked
 * against declared variables, errors with their offset in the expression). Every variable a rule
 * may read is declared: a name that is not one (`objcet`) is an error when the file loads, as is
 * an operator on the wrong types (`plan.delete.HTTPSEdge > "5"`).
 */
export const POLICY_VARIABLES = {
  object: { type: 'map<string, dyn>', description: 'The desired object, in the API\'s field names (references by identity, secrets as "(sensitive)"), with `kind`, `name` and `identity`; for a delete, the live object that goes.' },
  live: { type: 'dyn', description: 'The live object (references as ids), or null when there is none (a create).' },
  action: { type: 'string', description: 'What the plan does to the object: create, update, replace, delete or none.' },
  changes: { type: 'list<string>', description: 'The field paths the plan changes (hostports, tls_termination.min_version, oidc.client_secret).' },
  plan: { type: 'map<string, map<string, int>>', description: 'Objects per action and kind: plan.delete.HTTPSEdge, plan.create.HTTPSEdgeRoute (every manifest kind is there, 0 when none).' },
} as const;

export type PolicyVariable = keyof typeof POLICY_VARIABLES;

/** Expressions past this size are refused (a rule is a line or a few, not a program). */
const LIMITS = { maxAstNodes: 2_000, maxDepth: 60, maxListElements: 500, maxMapEntries: 200, maxCallArguments: 16 };

const environments = new Map<string, Environment>();

/** An environment that declares these variables only (cached per set). */
function environment(vars: readonly PolicyVariable[]): Environment {
  const key = vars.join(',');
  let env = environments.get(key);
  if (!env) {
    env = new (cel().Environment)({ unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false, limits: LIMITS });
    for (const v of vars) env.registerVariable(v, POLICY_VARIABLES[v].type, { description: POLICY_VARIABLES[v].description });
    environments.set(key, env);
  }
  return env;
}

const ALL: readonly PolicyVariable[] = ['object', 'live', 'action', 'changes', 'plan'];

/** A compiled expression: the function, and which variables it reads. */
export interface Compiled {
  /** A number no other expression compiled in this process has (evaluate.ts keeps verdicts by it). */
  serial: number;
  run: ParseResult;
  /** `run` as closures (fast.ts), for an expression in the subset they cover: BAIL when `run` must say. */
  fast?: (vars: Record<string, unknown>, src?: ObjectSource) => unknown;
  /** Reads only `object`: `validate` checks it, with no live state and no plan. */
  objectOnly: boolean;
  /** Reads only `plan` (or nothing): checked once per plan, not per object. */
  planOnly: boolean;
  /** Reads `live`: the live object is looked up for it. */
  readsLive: boolean;
  /**
   * What its value depends on, when that is few inputs: the object's top-level fields it reads
   * (every `object` in it is `object.FIELD`), and whether it reads `action`, `changes`, `plan`.
   * Undefined when it reads `live` or `object` as a whole: it is then evaluated every time.
   */
  inputs?: Inputs;
}

export interface Inputs { fields: string[]; action: boolean; changes: boolean; plan: boolean }

/** A compile error: what is wrong and where, as an offset in the expression. */
export interface CompileError { message: string; offset: number }

/** Compiles and type-checks `text`; `expect` is the type it must have (`bool` for rules and conditions). */
export function compile(text: string, expect: 'bool'): Compiled | CompileError {
  let c = compiledByText.get(text);
  if (!c) {
    if (compiledByText.size >= COMPILED_MAX) compiledByText.clear();
    compiledByText.set(text, (c = compileNew(text, expect)));
  }
  return c;
}

/**
 * Expressions compiled in this process, by their text: a process that plans again (watch, the
 * agent) compiles a policy file's expressions once (their verdicts are kept by evaluate.ts `verdict`).
 */
const compiledByText = new Map<string, Compiled | CompileError>();
const COMPILED_MAX = 2_000;

/** Forgets every compiled expression and its verdicts (evaluate.ts `clearPolicyCaches` forgets the rest). */
export function clearCompiled(): void {
  compiledByText.clear();
}

let serial = 0;

function compileNew(text: string, expect: 'bool'): Compiled | CompileError {
  const env = environment(ALL);
  let run: ParseResult;
  try {
    run = env.parse(text);
  } catch (err) {
    return errorOf(err);
  }
  const checked = run.check();
  if (!checked.valid) return errorOf(checked.error);
  if (checked.type !== expect && checked.type !== 'dyn') return { message: `must be a ${expect} expression (true passes); this one gives a ${checked.type}`, offset: 0 };
  // The variables it reads, from its syntax tree (a comprehension's own variable named like one
  // of them counts as reading it: the rule is then checked where more is known, never less).
  const used = identifiers(run.ast);
  const only = (vars: readonly PolicyVariable[]) => ALL.every((v) => vars.includes(v) || !used.has(v));
  const inputs = used.has('live') ? undefined : inputsOf(run.ast);
  const fast = compileFast(run.ast);
  return { serial: serial++, run, ...(fast ? { fast } : {}), objectOnly: only(['object']), planOnly: only(['plan']), readsLive: used.has('live'), ...(inputs ? { inputs } : {}) };
}

/**
 * The inputs an expression's value depends on, from its syntax tree, or undefined when `object`
 * is read other than as `object.FIELD` / `object.?FIELD` (`size(object)`, `object[k]`, a
 * comprehension variable named `object`).
 */
function inputsOf(ast: unknown): Inputs | undefined {
  const fields = new Set<string>();
  const out: Inputs = { fields: [], action: false, changes: false, plan: false };
  let whole = false;
  const walk = (node: unknown, parent?: { op: string; args: unknown }, place?: number): void => {
    if (whole) return;
    if (Array.isArray(node)) {
      node.forEach((x, i) => walk(x, parent, i));
      return;
    }
    if (!node || typeof node !== 'object' || !('op' in node)) return;
    const n = node as { op: string; args: unknown };
    if (n.op === 'id') {
      if (n.args === 'object') {
        const field = parent && (parent.op === '.' || parent.op === '.?') && place === 0 && Array.isArray(parent.args) ? parent.args[1] : undefined;
        if (typeof field === 'string') fields.add(field);
        else whole = true;
      } else if (n.args === 'action' || n.args === 'changes' || n.args === 'plan') out[n.args] = true;
      return;
    }
    if (Array.isArray(n.args)) n.args.forEach((x, i) => walk(x, n, i));
    else walk(n.args, n, 0);
  };
  walk(ast);
  if (whole) return undefined;
  out.fields = [...fields].sort();
  return out;
}

/** The identifiers of a parsed expression (`id` nodes; the AST of index.d.ts). */
function identifiers(node: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(node)) {
    for (const x of node) identifiers(x, out);
  } else if (node && typeof node === 'object' && 'op' in node) {
    const n = node as { op: string; args: unknown };
    if (n.op === 'id' && typeof n.args === 'string') out.add(n.args);
    else identifiers(n.args, out);
  }
  return out;
}

export function isCompileError(c: Compiled | CompileError): c is CompileError {
  return 'offset' in c;
}

function errorOf(err: unknown): CompileError {
  const e = err as { summary?: string; message?: string; range?: { start: number } };
  const message = e.summary ?? (e.message ?? String(err)).split('\n')[0];
  return { message: message.replace(/^Unknown variable: (\S+)$/, (_, v: string) => `unknown variable ${v} (a rule reads ${ALL.join(', ')})`), offset: e.range?.start ?? 0 };
}

/**
 * A JSON value as CEL reads it: whole numbers as CEL `int` (bigint), so `object.port + 1` and
 * `plan.delete.HTTPSEdge <= 5` compare ints with ints. Secrets and references are shown as
 * `display` shows them. Made once per object, only for objects some policy matches.
 */
export function celValue(v: unknown, token: (v: object) => unknown): unknown {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (v === null || typeof v !== 'object') return v;
  const t = token(v);
  if (t !== undefined) return t;
  // Copied only where something in it changes: most of a body (strings, lists of strings) is shared.
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const x = celValue(v[i], token);
      if (x !== v[i]) (out ??= v.slice())[i] = x;
    }
    return out ?? v;
  }
  let out: Record<string, unknown> | undefined;
  for (const k in v) {
    const was = (v as Record<string, unknown>)[k];
    const x = celValue(was, token);
    if (x !== was) (out ??= { ...v })[k] = x;
  }
  return out ?? v;
}

/** A CEL value back as JSON-able (bigint → number): for messages and test output. */
export function jsonValue(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(jsonValue);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonValue(x)]));
  return v;
}
