import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { didYouMean } from '../../util/suggest.js';
import { displayPath } from '../../util/display-path.js';
import { DEFAULT_STACK, readStackFile, StackFileError, type StackFile } from './config.js';
import type { VariableType } from './environment-schema.js';
import { manifestFiles, readManifest, type SourceDoc } from './load.js';
import { AddedDoc, applyPatch, readOverlayDocs, type OverlayDoc } from './overlays.js';
import { formatPath, hasErrors, type Problem } from './problems.js';
import { isVarRef, substituteDoc, type VariableValues } from './variables.js';

/**
 * Environments (docs/manifests.md, "Environments"): `environments:` and `variables:` of
 * `edgeplane.yaml` read, one environment chosen (`--env`, `EDGEPLANE_ENV`), and the manifests
 * expanded for it — variables substituted, overlays applied — before validation, so everything
 * after (validation, policies, the plan, watch) sees ordinary documents with positions in the
 * files that wrote each value.
 */

/** The environment variable that chooses the environment when `--env` is not given. */
export const ENV_VARIABLE = 'EDGEPLANE_ENV';

/** One file's documents and load problems (the shape `ManifestCache` and the loaders use). */
export interface FileDocs { path: string; docs: SourceDoc[]; problems: Problem[] }

interface Declared { name: string; type: VariableType; default?: unknown; hasDefault: boolean; pattern?: string; enum?: unknown[]; min?: number; max?: number; description?: string }

/** The environment a command runs in (or none: a stack file that declares no environments). */
export interface Environment {
  /** Its name; undefined when the stack file declares none. */
  name?: string;
  /** The environment's stack name (undefined without environments: the file's, as before). */
  stack?: string;
  /** Absolute path of the stack file, and how it is shown. */
  stackFile?: string;
  shownStackFile?: string;
  vars: VariableValues;
  /** Overlay files and folders of this environment (absolute). */
  overlays: string[];
  /** Every environment's overlays (absolute): not manifests of the stack. */
  allOverlays: string[];
  /** Variables named in every environment's overlays (no warning that they are unused). */
  usedInOverlays: Set<string>;
  apiUrl?: string;
  targetName?: string;
  embedded?: boolean;
  /** The stack file's problems with variables and values (every environment's), and positions to warn at. */
  problems: Problem[];
  /** Where each variable is declared (for the unused-variable warning). */
  declaredAt: Map<string, Problem>;
}

/** A user's mistake in choosing the environment (`--env`): said as it is, exit 1. */
export class EnvironmentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvironmentError';
  }
}

const isMapping = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The names of the environments the stack file of `root` declares (none: an empty list). */
export function environmentNames(root: string): string[] {
  const file = readStackFile(root);
  return isMapping(file.settings.environments) ? Object.keys(file.settings.environments) : [];
}

/** `--env` as given, else `EDGEPLANE_ENV` (empty is unset). */
export function envFlag(flag: string | undefined, env: Record<string, string | undefined> = process.env): string | undefined {
  if (flag !== undefined && flag !== '') return flag;
  const v = env[ENV_VARIABLE];
  return v === undefined || v === '' ? undefined : v;
}

/**
 * The environment of `root` named `name` (`--env`, `EDGEPLANE_ENV`). A stack file with
 * environments and no name, a name it does not declare, and a name for a stack file without
 * environments are refused (`EnvironmentError`), naming the environments. A stack file with
 * problems is refused whole (`StackFileError`), as `resolveStack` refuses it.
 */
export function selectEnvironment(root: string, name: string | undefined, opts: { cwd?: string; lenient?: boolean } = {}): Environment {
  const cwd = opts.cwd ?? process.cwd();
  const file = readStackFile(root, cwd);
  if (!opts.lenient && hasErrors(file.problems)) throw new StackFileError(file.problems);
  const envs = isMapping(file.settings.environments) ? file.settings.environments : undefined;
  const names = envs ? Object.keys(envs) : [];
  const where = file.doc && file.path ? (() => { const p = file.doc!.locate(['environments'], { key: true }); return `${p.file}:${p.line}:${p.col}`; })() : 'edgeplane.yaml';
  if (name === undefined && names.length) {
    throw new EnvironmentError(`${where}: this stack has environments (${names.join(', ')}): choose one with --env NAME (or ${ENV_VARIABLE}), or --env all where a command plans each`);
  }
  if (name !== undefined && !names.length) {
    throw new EnvironmentError(`--env ${name}: ${file.path ? `${file.doc?.file ?? 'edgeplane.yaml'} declares no environments` : `there is no edgeplane.yaml beside ${root}, so no environments`}; declare them under environments: (docs/manifests.md, "Environments"), or leave out --env`);
  }
  if (name !== undefined && !names.includes(name)) {
    throw new EnvironmentError(`--env ${name}: no environment ${JSON.stringify(name)} in ${where}${didYouMean(name, names)}; the environments are ${names.join(', ')}`);
  }
  return environmentOf(file, name, root);
}

/**
 * The environment of a library call that names none: the stack file's variables with their
 * defaults, no overlays (a stack file with problems is read as far as it goes: its problems are
 * the caller's to report).
 */
export function defaultEnvironment(root: string, cwd = process.cwd()): Environment {
  return environmentOf(readStackFile(root, cwd), undefined, root);
}

/** Reads the environment `name` (or none) of a stack file already read. */
export function environmentOf(file: StackFile, name: string | undefined, root: string): Environment {
  const dir = file.path ? dirname(file.path) : (existsSync(root) && statSync(root).isFile() ? dirname(root) : root);
  const problems: Problem[] = [];
  const at = (path: (string | number)[], message: string, severity: 'error' | 'warning' = 'error', key = false): Problem => ({
    ...(file.doc?.locate(path, { key }) ?? { file: 'edgeplane.yaml', line: 1, col: 1 }), severity, path: formatPath(path), rule: 'variable', message,
  });
  const declared = new Map<string, Declared>();
  const declaredAt = new Map<string, Problem>();
  const vars = isMapping(file.settings.variables) ? file.settings.variables : {};
  for (const [n, raw] of Object.entries(vars)) {
    if (!isMapping(raw) || typeof raw.type !== 'string') continue; // the schema said so
    const d: Declared = { name: n, type: raw.type as VariableType, hasDefault: 'default' in raw, default: raw.default };
    if (typeof raw.pattern === 'string') {
      try {
        new RegExp(raw.pattern, 'u');
        d.pattern = raw.pattern;
      } catch (err) {
        problems.push(at(['variables', n, 'pattern'], `is not a regular expression: ${(err as Error).message}`));
      }
    }
    if (Array.isArray(raw.enum)) d.enum = raw.enum;
    if (typeof raw.min === 'number') d.min = raw.min;
    if (typeof raw.max === 'number') d.max = raw.max;
    if (typeof raw.description === 'string') d.description = raw.description;
    declared.set(n, d);
    declaredAt.set(n, at(['variables', n], '', 'warning', true));
    if (d.hasDefault) for (const m of valueProblems(d, d.default)) problems.push(at(['variables', n, 'default'], `default: ${m}`));
  }
  const envs = isMapping(file.settings.environments) ? file.settings.environments : {};
  const names = Object.keys(envs);
  const stacks = new Map<string, string>();
  const fileStack = typeof file.settings.stack === 'string' ? file.settings.stack : DEFAULT_STACK;
  const allOverlays: string[] = [];
  // Every environment's values are checked, whichever is chosen: the file is one, and a wrong
  // production value is found by the staging run of a pull request.
  for (const e of names) {
    const env = isMapping(envs[e]) ? envs[e] : {};
    const stack = typeof env.stack === 'string' ? env.stack : `${fileStack}-${e}`;
    const other = stacks.get(stack);
    if (other !== undefined) problems.push(at(['environments', e, ...(typeof env.stack === 'string' ? ['stack'] : [])], `environments ${other} and ${e} have the same stack name ${JSON.stringify(stack)}: each environment needs its own (its locks, ownership markers and history)`));
    stacks.set(stack, e);
    const values = isMapping(env.values) ? env.values : {};
    for (const [n, v] of Object.entries(values)) {
      const d = declared.get(n);
      if (!d) {
        problems.push(at(['environments', e, 'values', n], `is not a variable${didYouMean(n, declared.keys())}; ${declared.size ? `the variables are ${[...declared.keys()].join(', ')}` : 'declare it under variables:'}`, 'error', true));
        continue;
      }
      for (const m of valueProblems(d, v)) problems.push(at(['environments', e, 'values', n], m));
    }
    for (const d of declared.values()) {
      if (!d.hasDefault && !(d.name in values)) problems.push(at(['variables', d.name], `variable ${d.name} has no value in environment ${e}: set environments.${e}.values.${d.name}, or give the variable a default`, 'error', true));
    }
    if (Array.isArray(env.overlays)) for (const o of env.overlays) if (typeof o === 'string') allOverlays.push(resolve(dir, o));
  }
  if (!names.length) {
    for (const d of declared.values()) {
      if (!d.hasDefault) problems.push(at(['variables', d.name], `variable ${d.name} has no value: give it a default, or declare environments that set it (environments.NAME.values.${d.name})`, 'error', true));
    }
  }
  const env = name !== undefined && isMapping(envs[name]) ? envs[name] : undefined;
  const values = new Map<string, unknown>();
  for (const d of declared.values()) if (d.hasDefault) values.set(d.name, d.default);
  if (env && isMapping(env.values)) for (const [n, v] of Object.entries(env.values)) if (declared.has(n)) values.set(n, v);
  // A value that fails its checks is not substituted: its problem is the stack file's.
  for (const [n, v] of values) if (valueProblems(declared.get(n)!, v).length) values.delete(n);
  const overlays: string[] = [];
  if (env && Array.isArray(env.overlays)) {
    env.overlays.forEach((o, i) => {
      if (typeof o !== 'string') return;
      const p = resolve(dir, o);
      if (!existsSync(p)) problems.push(at(['environments', name!, 'overlays', i], `overlay ${o} is not there (relative to ${file.doc?.file ?? 'edgeplane.yaml'})`));
      else overlays.push(p);
    });
  }
  return {
    name,
    stack: name !== undefined ? (typeof env?.stack === 'string' ? env.stack : `${fileStack}-${name}`) : undefined,
    stackFile: file.path, shownStackFile: file.doc?.file,
    vars: { values, declared: new Set(declared.keys()), plainText: !/[\0\ud800-\udfff]/.test(JSON.stringify([...values])) },
    overlays, allOverlays, usedInOverlays: new Set(),
    ...(typeof env?.api_url === 'string' ? { apiUrl: env.api_url } : {}),
    ...(typeof env?.target_name === 'string' ? { targetName: env.target_name } : {}),
    ...(typeof env?.embedded === 'boolean' ? { embedded: env.embedded } : {}),
    problems, declaredAt,
  };
}

/** What is wrong with `v` as a value of `d`: its type, then its checks. */
export function valueProblems(d: Declared, v: unknown): string[] {
  const list = d.type.startsWith('list(');
  const item = (list ? d.type.slice(5, -1) : d.type) as 'string' | 'number' | 'boolean';
  const typed = (x: unknown) => (item === 'number' ? typeof x === 'number' && Number.isFinite(x) : typeof x === item);
  const shown = (x: unknown) => JSON.stringify(x);
  if (list ? !Array.isArray(v) || !v.every(typed) : !typed(v)) {
    const quoted = !list && item === 'string' && (typeof v === 'number' || typeof v === 'boolean') ? ` (YAML read ${String(v)} as a ${typeof v}: write "${String(v)}" in quotes)` : '';
    return [`${shown(v)} is not a ${d.type}${quoted}${d.description ? ` (${d.name}: ${d.description})` : ''}`];
  }
  const out: string[] = [];
  const items = list ? (v as unknown[]) : [v];
  if (list) {
    if (item !== 'number' && d.min !== undefined && items.length < d.min) out.push(`has ${items.length} items; ${d.name} needs at least ${d.min}`);
    if (item !== 'number' && d.max !== undefined && items.length > d.max) out.push(`has ${items.length} items; ${d.name} takes at most ${d.max}`);
  }
  for (const x of items) {
    if (d.pattern !== undefined && typeof x === 'string' && !new RegExp(`^(?:${d.pattern})$`, 'u').test(x)) out.push(`${shown(x)} does not match the pattern ${d.pattern} of ${d.name}`);
    if (d.enum && !d.enum.some((e) => e === x)) out.push(`${shown(x)} is not one of ${d.enum.map(shown).join(', ')}${typeof x === 'string' ? didYouMean(x, d.enum.filter((e): e is string => typeof e === 'string')) : ''}`);
    if (typeof x === 'number' && d.min !== undefined && x < d.min) out.push(`${x} is below the minimum ${d.min} of ${d.name}`);
    if (typeof x === 'number' && d.max !== undefined && x > d.max) out.push(`${x} is above the maximum ${d.max} of ${d.name}`);
  }
  return out;
}

/** The overlay paths of every environment of the stack file of `root` (absolute): `manifestFiles` leaves them out. */
export function overlayPaths(root: string): string[] {
  let file: StackFile;
  try {
    file = readStackFile(root);
  } catch {
    return [];
  }
  const envs = isMapping(file.settings.environments) ? file.settings.environments : undefined;
  if (!envs || !file.path) return [];
  const dir = dirname(file.path);
  const out: string[] = [];
  for (const e of Object.values(envs)) {
    if (!isMapping(e) || !Array.isArray(e.overlays)) continue;
    for (const o of e.overlays) {
      if (typeof o !== 'string') continue;
      const p = resolve(dir, o);
      try {
        out.push(realpathSync(p));
      } catch {
        out.push(p);
      }
    }
  }
  return out;
}

/** Variable names a value refers to (`{var: NAME}`, `${var.NAME}`), without substituting. */
function varsIn(v: unknown, into: Set<string>): void {
  if (typeof v === 'string') {
    if (v.includes('${var.')) for (const m of v.matchAll(/(?<!\$)\$\{var\.([A-Za-z_][A-Za-z0-9_]*)\}/g)) into.add(m[1]);
    return;
  }
  if (!v || typeof v !== 'object') return;
  if (isVarRef(v) && typeof v.var === 'string') into.add(v.var);
  for (const x of Array.isArray(v) ? v : Object.values(v)) varsIn(x, into);
}

/** What one base file became: kept while its documents are the same array (watch). */
interface Expanded { entry: FileDocs; used: string[]; keys: Map<string, string[]>; hits: Set<OverlayDoc> }

/**
 * Expands manifest files for one environment: each document's variables substituted, the
 * environment's overlays applied. The result lists the files as given (the same `docs` array for
 * a file whose documents did not change, as watch compares them), then each overlay file (the
 * objects it adds, and its problems), then the stack file (its problems with variables and
 * values, and the unused-variable warnings).
 */
export class Expander {
  private readonly memo = new WeakMap<SourceDoc[], Expanded>();
  private overlay: { docs: OverlayDoc[]; files: FileDocs[] } | undefined;
  private readonly stackEntry: FileDocs;

  constructor(readonly env: Environment, private readonly cwd = process.cwd()) {
    this.stackEntry = { path: env.stackFile ?? 'edgeplane.yaml', docs: [], problems: env.problems };
    for (const p of env.allOverlays) {
      if (!existsSync(p)) continue;
      for (const f of manifestFiles(p)) for (const d of readManifest(f, cwd).docs) varsIn(d.value, env.usedInOverlays);
    }
  }

  /** Whether anything is to be done at all: no variable, no overlay (most stacks). Documents are still read for `{var:}` and `${`. */
  get trivial(): boolean {
    return !this.env.vars.declared.size && !this.env.overlays.length;
  }

  private overlays() {
    if (this.overlay) return this.overlay;
    const docs: OverlayDoc[] = [];
    const files: FileDocs[] = [];
    for (const p of this.env.overlays) {
      for (const f of manifestFiles(p)) {
        const read = readManifest(f, this.cwd);
        const problems = [...read.problems];
        const substituted = read.docs.map((d) => {
          const s = substituteDoc(d, this.env.vars);
          problems.push(...s.problems);
          return s.doc;
        });
        const mine = readOverlayDocs(substituted, problems);
        docs.push(...mine);
        const adds = mine.filter((o) => o.mode === 'add').map((o) => new AddedDoc(o.doc) as SourceDoc);
        files.push({ path: f, docs: adds, problems });
      }
    }
    return (this.overlay = { docs, files });
  }

  expand(files: FileDocs[]): FileDocs[] {
    const { docs: overlayDocs, files: overlayFiles } = this.overlays();
    const byTarget = new Map<string, OverlayDoc[]>();
    for (const o of overlayDocs) {
      if (o.mode === 'add') continue;
      const key = `${o.kind.manifestKind}/${o.name}`;
      byTarget.set(key, [...(byTarget.get(key) ?? []), o]);
    }
    const out: FileDocs[] = [];
    const used = new Set<string>(this.env.usedInOverlays);
    const names = new Map<string, Set<string>>(); // kind → names in the base manifests
    const hits = new Set<OverlayDoc>();
    for (const f of files) {
      let x = this.memo.get(f.docs);
      if (!x) this.memo.set(f.docs, (x = this.expandFile(f, byTarget)));
      out.push(x.entry);
      for (const u of x.used) used.add(u);
      for (const [k, ns] of x.keys) {
        let set = names.get(k);
        if (!set) names.set(k, (set = new Set()));
        for (const n of ns) set.add(n);
      }
      for (const h of x.hits) hits.add(h);
    }
    // Overlays that reached nothing, and additions of what the base has already: the overlay's mistakes.
    const overlayProblems = new Map<string, Problem[]>();
    for (const o of overlayDocs) {
      const known = [...(names.get(o.kind.manifestKind!) ?? [])];
      const here = known.includes(o.name);
      let message: string | undefined;
      if (o.mode === 'add' && here) message = `${o.kind.manifestKind}/${o.name} is in the base manifests already: change it with overlay: patch (overlay: add is for an object only this environment has)`;
      if (o.mode !== 'add' && !hits.has(o)) message = `targets nothing: no ${o.kind.manifestKind} named ${JSON.stringify(o.name)} in the manifests${didYouMean(o.name, known)}${o.mode === 'patch' ? '; an object only this environment has is written with overlay: add' : ''}`;
      if (message === undefined) continue;
      const p: Problem = { ...o.doc.locate(['name']), severity: 'error', path: 'name', rule: 'overlay', message };
      overlayProblems.set(o.doc.file, [...(overlayProblems.get(o.doc.file) ?? []), p]);
    }
    for (const f of overlayFiles) {
      const mine = overlayProblems.get(displayPath(f.path, this.cwd));
      out.push(mine ? { ...f, problems: [...f.problems, ...mine] } : f);
    }
    const unused = [...this.env.declaredAt.entries()].filter(([n]) => !used.has(n));
    out.push(unused.length
      ? { ...this.stackEntry, problems: [...this.stackEntry.problems, ...unused.map(([n, p]) => ({ ...p, message: `variable ${n} is not used by any manifest or overlay: remove it, or refer to it as {var: ${n}} or \${var.${n}}` }))] }
      : this.stackEntry);
    return out;
  }

  private expandFile(f: FileDocs, byTarget: Map<string, OverlayDoc[]>): Expanded {
    const problems: Problem[] = [...f.problems];
    const used: string[] = [];
    const keys = new Map<string, string[]>();
    const hits = new Set<OverlayDoc>();
    let docs: SourceDoc[] | undefined;
    for (let i = 0; i < f.docs.length; i++) {
      const s = substituteDoc(f.docs[i], this.env.vars);
      for (const u of s.used) if (!used.includes(u)) used.push(u);
      if (s.problems.length) problems.push(...s.problems);
      let doc: SourceDoc | undefined = s.doc;
      const v = doc.value;
      if (isMapping(v) && typeof v.kind === 'string' && typeof v.name === 'string') {
        keys.set(v.kind, [...(keys.get(v.kind) ?? []), v.name]);
        for (const o of byTarget.get(`${v.kind}/${v.name}`) ?? []) {
          hits.add(o);
          if (!doc) break;
          doc = o.mode === 'remove' ? undefined : applyPatch(doc, o, problems);
        }
      }
      if (doc !== f.docs[i]) {
        docs ??= f.docs.slice(0, i);
        if (doc) docs.push(doc);
      } else if (docs) docs.push(doc);
    }
    const entry = docs || problems.length !== f.problems.length ? { path: f.path, docs: docs ?? f.docs, problems } : f;
    return { entry, used, keys, hits };
  }
}

/**
 * The expansion of a watch session: the environment read again, and a new `Expander` made, only
 * when `edgeplane.yaml` or an overlay file changed since the last run (a base file saved keeps
 * every other file's expanded documents, as watch keeps what it found in them).
 */
export class WatchedEnvironment {
  private expander: Expander | undefined;
  private signature: string | undefined;

  constructor(private readonly root: string, private readonly name: string | undefined, private readonly cwd = process.cwd()) {}

  expand(files: FileDocs[]): FileDocs[] {
    const signature = this.read();
    if (!this.expander || signature !== this.signature) {
      this.expander = new Expander(selectEnvironment(this.root, this.name, { lenient: true, cwd: this.cwd }), this.cwd);
      this.signature = signature;
    }
    return this.expander.expand(files);
  }

  /**
   * Whether the stack file or an overlay file reads otherwise than when the manifests were last
   * expanded: checked right before applying, as the manifests are (a save meanwhile plans again).
   */
  changedSinceExpand(): boolean {
    if (this.signature === undefined) return false;
    try {
      return this.read() !== this.signature;
    } catch {
      return true;
    }
  }

  /** The text of the stack file and of every overlay file, as one string to compare. */
  private read(): string {
    const parts: string[] = [];
    const file = readStackFile(this.root, this.cwd);
    if (file.path) parts.push(file.path, readFileSync(file.path, 'utf8'));
    for (const p of overlayPaths(this.root)) {
      if (!existsSync(p)) {
        parts.push(p, '(none)');
        continue;
      }
      for (const f of manifestFiles(p)) parts.push(f, readFileSync(f, 'utf8'));
    }
    return parts.join('\0');
  }
}
