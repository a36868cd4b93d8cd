import { isUtf8 } from 'node:buffer';
import { readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { displayPath } from '../../util/display-path.js';
import { createRequire } from 'node:module';
import type { Document, Node } from 'yaml';
import type { Position, Problem } from './problems.js';
import { parseYamlFastSources, yamlFastEnabled, type DocSource } from './yaml-fast/parser.js';
import { overlayPaths } from './environments.js';

/** The stack configuration file; it sits beside the manifests and is not a manifest. */
export const CONFIG_FILES = ['edgeplane.yaml', 'edgeplane.yml'];

/**
 * Whether a file name is a manifest's: `.yaml` or `.yml`, in any case (a `web.YAML` saved by a
 * Windows editor was skipped, and every object in it planned for deletion). `watch` uses the same.
 */
export function isManifestName(name: string): boolean {
  return /\.ya?ml$/i.test(name);
}

/** One YAML document of a manifest file, its value and a way back to source positions. */
export interface SourceDoc {
  file: string;
  /** 0-based index of the document in its file. */
  index: number;
  value: unknown;
  /** Position of the node at `path` (or of the nearest ancestor that exists); `key` for the key of a pair. */
  locate(path: (string | number)[], opts?: { key?: boolean }): Position;
  /**
   * `before` (this document as read from the same file before) when it is the same text at the
   * same place, so the same value and positions: watch keeps what it found in a document that did
   * not change. Else (and when absent) this document.
   */
  reuse?(before: SourceDoc): SourceDoc;
  /**
   * The file holds no backslash and no U+0000: no value in it can hold U+0000 or an unpaired
   * surrogate (UTF-8 text cannot encode one; only YAML escapes write them), so validation need not
   * look. Absent: look.
   */
  plainText?: boolean;
}

/** `nested`: the settings files of directories left out as other stacks' (`manifestFiles`). */
export interface Loaded { docs: SourceDoc[]; problems: Problem[]; files: string[]; nested: string[] }

/**
 * Every `.yaml` / `.yml` file under `root` (a directory read recursively, or one file), sorted. A
 * directory below `root` with an `edgeplane.yaml` of its own is another stack's: nothing in it is
 * read (its objects would be claimed for this stack), and its settings file is added to `nested`
 * when given (`nestedStackProblems` says which stack it is, and refuses this stack's own). A link to a directory that holds `root` is refused:
 * it would read the stacks beside this one.
 */
export function manifestFiles(root: string, nested?: string[]): string[] {
  let st;
  try {
    st = statSync(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw Object.assign(new Error(`${root}: no such directory or file (give the directory of your manifests)`), { code: 'ENOENT' });
  }
  if (st.isFile()) return [root];
  const out: string[] = [];
  const rootReal = realpathSync(root);
  // A symbolic link to a directory is read like the directory (as `watch` watches it): skipped, its
  // manifests' objects would be planned for deletion. Each real directory is read once (no loops).
  const walked = new Set<string>();
  // The environments' overlays (environments.NAME.overlays of edgeplane.yaml) are not manifests of the stack.
  const overlays = overlayPaths(root);
  const walk = (dir: string, top: boolean) => {
    const real = realpathSync(dir);
    if (walked.has(real)) return;
    if (!top && rootReal.startsWith(real.endsWith(sep) ? real : real + sep)) {
      throw Object.assign(new Error(`${dir}: a link to ${real}, which holds this stack's directory ${rootReal}: reading it would read this stack's manifests again, and every directory beside them; remove the link`), { code: 'ELOOP' });
    }
    walked.add(real);
    const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name));
    const settings = top ? undefined : entries.find((e) => CONFIG_FILES.includes(e.name) && !e.isDirectory());
    if (settings) {
      nested?.push(join(dir, settings.name));
      return;
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const p = join(dir, entry.name);
      if (overlays.length && overlays.includes(realpathOr(p))) continue;
      if (entry.isDirectory() || (entry.isSymbolicLink() && isDirectory(p))) walk(p, false);
      else if (isManifestName(entry.name) && !(top && CONFIG_FILES.includes(entry.name))) {
        if (!entry.isFile()) readableFile(p);
        out.push(p);
      }
    }
  };
  walk(root, true);
  return out;
}

/**
 * A manifest name that is not a plain file: a link is followed (to a file: read as one); a link to
 * nothing, or a FIFO or a device, is refused by name. Skipped, its objects would be planned for
 * deletion; read, a FIFO waits forever for a writer.
 */
function readableFile(p: string): void {
  let st;
  try {
    st = statSync(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw Object.assign(new Error(`${p}: a symbolic link to ${readlinkSync(p)}, which is not there`), { code: 'ENOENT' });
  }
  if (!st.isFile()) throw Object.assign(new Error(`${p}: not a regular file (a FIFO, a socket or a device): a manifest must be a file`), { code: 'EFTYPE' });
}

function realpathOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** Whether `p` leads to a directory (a dangling link does not). */
function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * A stack is planned from its directory: every manifest file in it makes the stack, and what is in
 * none of them is deleted. One file alone would be planned as the whole stack (every object of
 * the other files deleted), without the references and the `edgeplane.yaml` of its directory:
 * refused (`validate` checks one file).
 */
export function stackDirectory(root: string): void {
  let file = false;
  try {
    file = statSync(root).isFile();
  } catch {
    return; // not there: manifestFiles says so
  }
  if (file) throw new Error(`${root} is a file: plan, apply and watch take the directory of the stack's manifests (every file in it makes the stack; planned alone, one file would delete the objects of the others): give the directory that holds it`);
}

/**
 * The manifest files a command plans from. A root with none at all is refused: a plan from no
 * manifests deletes every object of the stack, and an empty directory is far more often a wrong
 * path (or files moved away) than that intent. Deleting everything on purpose takes an empty
 * manifest file. A root that is not there fails as in `manifestFiles`.
 */
export function filesToPlan(root: string): string[] {
  stackDirectory(root);
  return manifestFilesOrRefuse(root);
}

/** `manifestFiles`, refusing a root with none (`validate` takes one file too). */
export function manifestFilesOrRefuse(root: string): string[] {
  const nested: string[] = [];
  const files = manifestFiles(root, nested);
  if (!files.length && nested.length) {
    const dirs = nested.map((f) => relative(root, dirname(f)) + '/');
    throw new Error(`${root}: no manifest files here, only ${dirs.length === 1 ? 'a directory' : 'directories'} with an edgeplane.yaml of ${dirs.length === 1 ? 'its' : 'their'} own (${dirs.join(', ')}): each is a stack planned on its own (edgeplane plan ${join(root, dirs[0])})`);
  }
  if (!files.length) {
    throw new Error(`${root}: no manifest files (.yaml or .yml) here, and a plan from none would delete every object of the stack; to do that on purpose, add an empty manifest file (such as none.yaml)`);
  }
  return files;
}

/** Reads and parses every manifest under `root`; paths in problems are relative to `cwd`. */
export function loadManifests(root: string, cwd = process.cwd()): Loaded {
  const nested: string[] = [];
  const files = manifestFiles(root, nested);
  const docs: SourceDoc[] = [];
  const problems: Problem[] = [];
  for (const path of files) {
    const parsed = readManifest(path, cwd);
    docs.push(...parsed.docs);
    problems.push(...parsed.problems);
  }
  return { docs, problems, files, nested };
}

/**
 * One manifest file, read (or given as the `bytes` already read: watch compares them with its last
 * read) and parsed. A file that is not UTF-8 (a Windows editor's UTF-16, a Latin-1 file) is one problem,
 * saying so, instead of the schema errors its garbled keys would give.
 */
export function readManifest(path: string, cwd: string, bytes: Buffer = readFileSync(path)): { docs: SourceDoc[]; problems: Problem[] } {
  const shown = displayPath(path, cwd);
  const text = bytes.toString('utf8');
  const problem = (line: number, col: number, message: string) => ({ docs: [], problems: [{ file: shown, line, col, severity: 'error' as const, path: '', rule: 'encoding', message }] });
  if (bytes.length >= 2 && ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff))) {
    return problem(1, 1, 'the file is UTF-16 text: save it as UTF-8');
  }
  if (!isUtf8(bytes)) {
    const at = Math.max(0, text.indexOf('\ufffd'));
    const before = text.slice(0, at);
    return problem(before.split('\n').length, at - before.lastIndexOf('\n'), 'the file is not UTF-8 text (the byte here is not valid UTF-8): save it as UTF-8');
  }
  return parseSource(shown, text);
}

/**
 * Parses one file's text into documents. Most manifests are inside the subset `yaml-fast/parser.ts`
 * parses quickly; their positions are found only when asked for (a problem to report, a literal
 * secret), by parsing the text once more with the `yaml` library. Any other text, including every
 * text with a syntax error, is parsed by the library at once, as it reports the errors.
 */
export function parseSource(file: string, text: string): { docs: SourceDoc[]; problems: Problem[] } {
  const parsed = yamlFastEnabled() ? parseYamlFastSources(text) : undefined;
  if (!parsed) return parseWithLibrary(file, text);
  const plainText = !/[\\\0]/.test(text);
  const docs: SourceDoc[] = [];
  const source = new FastSource(file, text);
  for (let index = 0; index < parsed.docs.length; index++) {
    const value = parsed.docs[index];
    if (value === null) continue; // an empty document (a trailing `---`)
    docs.push(new FastDoc(file, index, value, plainText, source, parsed.sources[index]));
  }
  return { docs, problems: [] };
}

/** Positions in a file the fast parser read, found by parsing it again with the library when first asked for. */
class FastSource {
  private byIndex: Map<number, SourceDoc> | undefined;
  constructor(private readonly file: string, private readonly text: string) {}

  locate(index: number, path: (string | number)[], opts?: { key?: boolean }): Position {
    // Same documents, same indexes: the fast parser only accepts texts the library parses without errors.
    this.byIndex ??= new Map(parseWithLibrary(this.file, this.text).docs.map((d) => [d.index, d]));
    // The library should read every document this parser read; if one is beyond it, the file's start.
    return this.byIndex.get(index)?.locate(path, opts) ?? { file: this.file, line: 1, col: 1 };
  }
}

/** A document the fast parser read (a class: no closure per document, and a directory has thousands). */
class FastDoc implements SourceDoc {
  constructor(readonly file: string, readonly index: number, readonly value: unknown, readonly plainText: boolean, private source: FastSource, private readonly text: DocSource) {}

  locate(path: (string | number)[], opts?: { key?: boolean }): Position {
    return this.source.locate(this.index, path, opts);
  }

  reuse(before: SourceDoc): SourceDoc {
    if (!(before instanceof FastDoc) || before.file !== this.file || before.index !== this.index || before.plainText !== this.plainText ||
      before.text.line !== this.text.line || before.text.text !== this.text.text) return this;
    // Its positions are now read from this read of the file (the same, where this document is): the old text can go.
    before.source = this.source;
    return before;
  }
}

let yamlLib: typeof import('yaml') | undefined;
/**
 * The `yaml` library, loaded the first time it is needed: for text outside the fast parser's
 * subset, for positions in messages, for `edgeplane.yaml` files the fast parser declines. A
 * command whose manifests all parse fast and have no problem does not load it.
 */
export function yamlLibrary(): typeof import('yaml') {
  return (yamlLib ??= createRequire(import.meta.url)('yaml') as typeof import('yaml'));
}

/** The `yaml` library's parse, with positions through a LineCounter (the `Document`s are kept for `locate`). */
const TOO_DEEP = 'the document nests too deeply to be read (collections inside collections, hundreds of levels)';

export function parseWithLibrary(file: string, text: string): { docs: SourceDoc[]; problems: Problem[] } {
  const { LineCounter, parseAllDocuments } = yamlLibrary();
  const lc = new LineCounter();
  const parsed = parseAllDocuments(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  const plainText = !/[\\\0]/.test(text);
  const all = Array.isArray(parsed) ? parsed : [];
  const problems: Problem[] = [];
  const docs: SourceDoc[] = [];
  const pos = (offset: number): Position => {
    const { line, col } = lc.linePos(offset);
    return { file, line, col };
  };
  all.forEach((doc, index) => {
    let tooDeep = false;
    for (const e of doc.errors) {
      // The library's stack ran out, once per level it unwound: one problem says it.
      if (/call stack/i.test(e.message)) {
        if (!tooDeep) problems.push({ ...pos(e.pos[0]), severity: 'error', path: '', rule: 'yaml', message: TOO_DEEP });
        tooDeep = true;
      } else problems.push({ ...pos(e.pos[0]), severity: 'error', path: '', rule: 'yaml', message: e.message.split('\n')[0] });
    }
    if (doc.errors.length) return;
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      // An alias to no anchor before it, or aliases expanding past the limit (a "billion laughs"):
      // a problem of this document, at the alias where one is to blame.
      problems.push({ ...pos(aliasOffset(doc)), severity: 'error', path: '', rule: 'yaml', message: aliasMessage((err as Error).message) });
      return;
    }
    if (value === null || value === undefined) return; // an empty document (a trailing `---`)
    docs.push({ file, index, value, plainText, locate: (path, opts) => pos(offsetOf(doc, path, opts?.key ?? false)) });
  });
  return { docs, problems };
}

/** Where a document's alias problem is: the first alias that names no anchor before it, else the document's start. */
function aliasOffset(doc: Document): number {
  const { visit } = yamlLibrary();
  let at = (doc.contents as Node | null)?.range?.[0] ?? 0;
  visit(doc, {
    Alias(_, node) {
      if (node.resolve(doc) === undefined) {
        at = node.range?.[0] ?? at;
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return at;
}

function aliasMessage(message: string): string {
  if (/call stack/i.test(message)) return TOO_DEEP;
  const name = /Unresolved alias.*: (\S+)$/i.exec(message.split('\n')[0])?.[1];
  if (name !== undefined) return `alias *${name} refers to no anchor &${name} set before it in this document`;
  if (/alias count/i.test(message)) return 'the aliases in this document expand to over 100 copies: refused as a resource exhaustion attack (write the values out)';
  return message.split('\n')[0];
}

function offsetOf(doc: Document, path: (string | number)[], key: boolean): number {
  const { isMap, isPair, isScalar, isSeq } = yamlLibrary();
  let node: unknown = doc.contents;
  let best = (doc.contents as Node | null)?.range?.[0] ?? 0;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) return best;
      const last = i === path.length - 1;
      if (last && key) return (pair.key as Node).range?.[0] ?? best;
      node = pair.value;
      best = (pair.value as Node | null)?.range?.[0] ?? (pair.key as Node).range?.[0] ?? best;
    } else if (isSeq(node) && typeof seg === 'number') {
      const item = node.items[seg] as Node | undefined;
      if (!item) return best;
      node = item;
      best = item.range?.[0] ?? best;
    } else {
      return best;
    }
  }
  return best;
}
