import { didYouMean } from '../../util/suggest.js';
import type { SourceDoc } from './load.js';
import { formatPath, type Position, type Problem } from './problems.js';

/**
 * Variables in manifests (docs/manifests.md, "Environments"): a whole field written `{var: NAME}`
 * takes the variable's value as it is typed (a number stays a number, a list a list); `${var.NAME}`
 * inside a string puts its text there; `$${` writes a literal `${`. Any other `${` is an error, as
 * is an unknown variable: a typo never becomes an empty string or a literal `${…}` sent to the
 * service.
 *
 * Substitution makes a new value for a document and keeps its paths: `{var: hosts}` becomes the
 * list at the same path, so positions are still found in the document's source (a path inside
 * the list is located at the `{var: hosts}` that wrote it), as secrets' `{env: NAME}` are.
 */

/** The values of one environment, by variable name, and the names declared (for did-you-mean and unused warnings). */
export interface VariableValues {
  values: ReadonlyMap<string, unknown>;
  /** Declared variables (those without a value have a problem of their own in the stack file). */
  declared: ReadonlySet<string>;
  /** No value holds U+0000 or a UTF-16 surrogate: a document of plain text stays one once substituted. */
  plainText?: boolean;
}

/** A whole field taken from a variable: a mapping of exactly `var`. */
export function isVarRef(v: unknown): v is { var: unknown } {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
  for (const k in v) if (k !== 'var') return false;
  return 'var' in v;
}

/** A document with its variables substituted, what it used, and the problems found. */
export interface Substituted { doc: SourceDoc; used: string[]; problems: Problem[] }

const PLACEHOLDER = /\$\$\{|\$\{(?:var\.([A-Za-z_][A-Za-z0-9_]*)\}|([^}]*)\}?)/g;

/**
 * `doc` with its `{var: NAME}` and `${var.NAME}` replaced by the values. The same document (not a
 * copy) when it refers to no variable and writes no `$${`: nothing is allocated for the many
 * documents that use none.
 */
export function substituteDoc(doc: SourceDoc, vars: VariableValues): Substituted {
  const used: string[] = [];
  const problems: Problem[] = [];
  const problem = (path: (string | number)[], message: string, rule = 'variable') => {
    problems.push({ ...doc.locate(path), severity: 'error', path: formatPath(path), rule, message });
  };
  const lookup = (name: string, path: (string | number)[]): { ok: true; value: unknown } | { ok: false } => {
    if (vars.values.has(name)) {
      if (!used.includes(name)) used.push(name);
      return { ok: true, value: vars.values.get(name) };
    }
    if (vars.declared.has(name)) {
      if (!used.includes(name)) used.push(name);
      return { ok: false }; // declared with no value: the stack file's problem says so
    }
    const known = [...vars.declared];
    problem(path, `unknown variable ${JSON.stringify(name)}${didYouMean(name, known)}; ${known.length ? `the variables are ${known.join(', ')}` : 'declare it under variables: in edgeplane.yaml'}`, 'unknown-variable');
    return { ok: false };
  };
  const text = (s: string, path: (string | number)[]): string => {
    if (s.indexOf('${') < 0) return s;
    return s.replace(PLACEHOLDER, (all, name: string | undefined, other: string | undefined) => {
      if (all === '$${') return '${';
      if (name !== undefined) {
        const got = lookup(name, path);
        if (!got.ok) return all;
        const v = got.value;
        if (Array.isArray(v)) {
          problem(path, `variable ${name} is a list: a list cannot go inside a string; write the whole field as {var: ${name}}`, 'variable-type');
          return all;
        }
        return String(v);
      }
      const hint = other !== undefined && /^[A-Za-z_][A-Za-z0-9_]*$/.test(other) ? ` (did you mean \${var.${other}}?)` : '';
      problem(path, `${JSON.stringify(all)} is not a variable: write \${var.NAME}${hint}, or $\${ for a literal \${`, 'variable-syntax');
      return all;
    });
  };
  const walk = (v: unknown, path: (string | number)[]): unknown => {
    if (typeof v === 'string') return text(v, path);
    if (!v || typeof v !== 'object') return v;
    if (Array.isArray(v)) {
      let out: unknown[] | undefined;
      for (let i = 0; i < v.length; i++) {
        const x = walk(v[i], [...path, i]);
        if (x !== v[i]) (out ??= v.slice())[i] = x;
      }
      return out ?? v;
    }
    if (isVarRef(v)) {
      const name = v.var;
      if (typeof name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
        problem([...path, 'var'], '{var: NAME} names a variable: letters, digits and "_"', 'variable-syntax');
        return v;
      }
      const got = lookup(name, [...path, 'var']);
      // Copied: the value is shared by every document that uses it, and each is its own object.
      return got.ok ? structuredClone(got.value) : v;
    }
    let out: Record<string, unknown> | undefined;
    const o = v as Record<string, unknown>;
    for (const k in o) {
      const x = walk(o[k], [...path, k]);
      if (x !== o[k]) (out ??= { ...o })[k] = x;
    }
    return out ?? v;
  };
  const value = walk(doc.value, []);
  if (value === doc.value) return { doc, used, problems };
  return { doc: new SubstitutedDoc(doc, value, !!vars.plainText && !!doc.plainText), used, problems };
}

/** A document whose value had variables substituted: its positions are its source's (the same paths). */
class SubstitutedDoc implements SourceDoc {
  readonly file: string;
  readonly index: number;
  readonly plainText: boolean | undefined;
  constructor(readonly source: SourceDoc, readonly value: unknown, plainText: boolean) {
    this.file = source.file;
    this.index = source.index;
    // Unless every value is plain text, looked at again (U+0000 in a value is refused as in a manifest).
    this.plainText = plainText;
  }

  locate(path: (string | number)[], opts?: { key?: boolean }): Position {
    return this.source.locate(path, opts);
  }
}

/**
 * A value as a manifest would write it so that substitution gives it back: every `${` in a string
 * doubled to `$${` (export writes the live state; a header value `${x}` must come back as itself).
 */
export function escapeText<T>(v: T): T {
  if (typeof v === 'string') return (v.includes('${') ? v.replaceAll('${', () => '$${') : v) as T;
  if (!v || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(escapeText) as T;
  if (isVarRef(v)) return v; // written by export on purpose
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = escapeText(x);
  return out as T;
}
