import { createHash } from 'node:crypto';
import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { brotliCompressSync, brotliDecompress, brotliDecompressSync, constants as zlib } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { loadMigrations, type Migration } from './migrate.js';

/**
 * A new embedded database starts from a template: a data directory made once by PGlite's initdb
 * (with the engine's settings), migrated and shut down cleanly, committed in a form of our own
 * (`packTemplate`). Without it, the first command on a new state directory runs initdb, which
 * PGlite does in a second WebAssembly instance, far slower and with about twice the peak memory
 * (bench/README.md). Tests open many in-memory databases and gain the same.
 *
 * The template is used only when it was made by the PGlite version installed and with the same
 * settings (`pglite-template.json`); otherwise initdb runs as before, and a test fails until
 * `npm run pglite-template` writes a new one (`pglite-template-make.ts`). This module loads
 * nothing of PGlite: the CLI's main thread writes a new state directory's database out
 * (`writeTemplateInto`) while the embedded service's thread boots.
 */
const HERE = dirname(fileURLToPath(import.meta.url));
export const TEMPLATE_FILE = join(HERE, '..', 'generated', 'pglite-template.br');
export const TEMPLATE_META = join(HERE, '..', 'generated', 'pglite-template.json');

/** `migrations`: those applied in the template, each with its SQL's SHA-256. */
export interface TemplateMeta { pglite: string; settings: Record<string, string>; migrations?: { name: string; sha256: string }[] }

/**
 * PostgreSQL settings for the embedded engine, given on every start. PGlite makes its whole buffer
 * pool resident when it starts, so PostgreSQL's default pool would be resident in every CLI run,
 * however small the state. 8 MB holds what a small stack's commands read; a large stack's tables
 * outgrow 16 MB as well (6,200 objects: some 30 MB), and their pages come from the operating
 * system's file cache either way. Each MB here is about one more MB of every run's peak memory.
 */
export const PGLITE_SETTINGS: Record<string, string> = { shared_buffers: '8MB' };

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The installed PGlite's version (its package.json is not exported: found next to its entry). */
export function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      const p = JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string; version?: string };
      if (p.name === '@electric-sql/pglite' && p.version) return p.version;
    }
  }
  throw new Error('cannot find the version of @electric-sql/pglite');
}

/**
 * Whether the committed template fits this installation and these settings, and the migrations it
 * holds are this version's, unchanged (migrations added since are applied on top, as on any
 * database; `npm run pglite-template` puts them in).
 */
export function templateFits(meta: TemplateMeta | undefined, settings: Record<string, string>, migrations: Migration[] = loadMigrations()): boolean {
  if (!meta || meta.pglite !== pgliteVersion() || JSON.stringify(meta.settings) !== JSON.stringify(settings)) return false;
  const current = new Map(migrations.map((m) => [m.name, sha256(m.sql)]));
  return (meta.migrations ?? []).every((m) => current.get(m.name) === m.sha256);
}

export function readTemplateMeta(): TemplateMeta | undefined {
  try {
    return JSON.parse(readFileSync(TEMPLATE_META, 'utf8')) as TemplateMeta;
  } catch {
    return undefined;
  }
}

/**
 * The template's form (brotli-compressed): a 4-byte little-endian length, that many bytes of JSON
 * (`TemplateIndex`), then the bytes of every file's extents, file after file. Only what is not
 * zero is kept, in extents of whole 8 KB pages (PostgreSQL's page, and its WAL's): the rest of a
 * file is a hole, which reads as zeros (an empty page to PostgreSQL, the unwritten rest of a WAL
 * segment). The template's WAL is one segment holding its shutdown checkpoint, the rest zeros.
 */
export interface TemplateIndex {
  dirs: string[];
  /** Path, size, then [offset, length] pairs: the extents whose bytes the data holds. */
  files: [path: string, size: number, extents: number[]][];
}
interface Template { index: TemplateIndex; data: Buffer }

const PAGE = 8192;

/**
 * Decompressed into one buffer of this size (the template is some 9 MB): zlib's default of 16 KB
 * chunks costs hundreds of callbacks and a copy of them all into one buffer, half the time.
 */
const UNPACKED_CHUNK = 16 << 20;

/** The template, read whole; it throws if its data is not what its index says (a damaged file). */
function readTemplate(): Template {
  return parseTemplate(brotliDecompressSync(readFileSync(TEMPLATE_FILE), { chunkSize: UNPACKED_CHUNK }));
}

let preloaded: Promise<Buffer> | undefined;

/**
 * Starts reading and decompressing the template on the thread pool, for a new directory's database
 * written soon (`writeTemplateInto`): the CLI calls it as a command that writes starts on a state
 * directory with no database (`cli/prestart.ts`), so that the write, which the service thread waits
 * for, is left with the files alone.
 */
export function preloadTemplate(): void {
  preloaded ??= readFile(TEMPLATE_FILE).then((packed) => new Promise<Buffer>((ok, fail) => brotliDecompress(packed, { chunkSize: UNPACKED_CHUNK }, (err, raw) => (err ? fail(err) : ok(raw)))));
  preloaded.catch(() => {}); // read again, and refused, by the write
}

function parseTemplate(raw: Buffer): Template {
  const length = raw.readUInt32LE(0);
  const index = JSON.parse(raw.subarray(4, 4 + length).toString('utf8')) as TemplateIndex;
  const data = raw.subarray(4 + length);
  let total = 0;
  for (const [, size, pairs] of index.files) {
    for (let i = 0; i < pairs.length; i += 2) {
      if (pairs[i] % PAGE !== 0 || pairs[i] + pairs[i + 1] > size) throw new Error('the template\'s index is damaged');
      total += pairs[i + 1];
    }
  }
  if (total !== data.length) throw new Error('the template\'s data does not match its index');
  return { index, data };
}

/** `rel` under `root`, refused if it would lead out of it. */
function inside(root: string, rel: string): string {
  const r = normalize(rel);
  if (isAbsolute(r) || r === '..' || r.startsWith(`..${sep}`)) throw new Error(`template entry outside the data directory: ${rel}`);
  return join(root, r);
}

/** Every file of `template`, with its extents' bytes: `write(path, size, [offset, bytes][])`. */
function eachFile(template: Template, write: (path: string, size: number, extents: [number, Buffer][]) => void): void {
  let at = 0;
  for (const [path, size, pairs] of template.index.files) {
    const extents: [number, Buffer][] = [];
    for (let i = 0; i < pairs.length; i += 2) {
      extents.push([pairs[i], template.data.subarray(at, at + pairs[i + 1])]);
      at += pairs[i + 1];
    }
    write(path, size, extents);
  }
}

let cached: { settings: string; blob: Blob | undefined } | undefined;

/**
 * The template as a tar archive, for PGlite's `loadDataDir` (an in-memory database), or undefined
 * (initdb makes it) when there is none that fits.
 */
export function templateFor(settings: Record<string, string>): Blob | undefined {
  const key = JSON.stringify(settings);
  if (cached?.settings !== key) {
    let blob: Blob | undefined;
    try {
      if (templateFits(readTemplateMeta(), settings)) blob = new Blob([new Uint8Array(tarOf(readTemplate()))]);
    } catch {
      blob = undefined; // unreadable: initdb it is
    }
    cached = { settings: key, blob };
  }
  return cached.blob;
}

/** A ustar archive of the template's directories and files (holes written out as zeros). */
function tarOf(template: Template): Buffer {
  const parts: Buffer[] = [];
  const header = (name: string, size: number, dir: boolean) => {
    if (Buffer.byteLength(name) > 100) throw new Error(`template path too long for tar: ${name}`);
    const h = Buffer.alloc(512);
    h.write(name, 0);
    h.write(dir ? '0000700\0' : '0000600\0', 100);
    h.write('0000000\0', 108);
    h.write('0000000\0', 116);
    h.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
    h.write(`${Math.floor(Date.now() / 1000).toString(8).padStart(11, '0')}\0`, 136);
    h.fill(' ', 148, 156);
    h.write(dir ? '5' : '0', 156);
    h.write('ustar\0' + '00', 257);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    parts.push(h);
  };
  for (const dir of template.index.dirs) header(dir, 0, true);
  eachFile(template, (path, size, extents) => {
    header(path, size, false);
    const body = Buffer.alloc(Math.ceil(size / 512) * 512);
    for (const [offset, bytes] of extents) bytes.copy(body, offset);
    parts.push(body);
  });
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/**
 * Writes the template's files as the data directory `data` (which must not exist): a new state
 * directory's database, ready for PGlite to open as an existing one. Loading the template through
 * PGlite (`loadDataDir`) unpacks it into PGlite's in-memory file system and copies it out again,
 * twice the time and about 130 MB more peak memory (bench/README.md). The files go to a sibling
 * directory first, renamed into place once all are written: a process killed meanwhile leaves no
 * half database behind (only the sibling, removed by the next try). False: no template fits.
 */
export async function extractTemplate(settings: Record<string, string>, data: string): Promise<boolean> {
  const raw = preloaded ? await preloaded.catch(() => undefined) : undefined;
  preloaded = undefined; // used once: a later write reads it afresh
  return extractTemplateNow(settings, data, raw);
}

/**
 * `extractTemplate` on this thread at once, from `raw` (the template decompressed ahead) or read and
 * decompressed here: for a thread with nothing else to do meanwhile.
 */
function extractTemplateNow(settings: Record<string, string>, data: string, raw?: Buffer): boolean {
  if (!templateFits(readTemplateMeta(), settings)) return false;
  let template: Template;
  try {
    template = raw ? parseTemplate(raw) : readTemplate();
  } catch {
    return false; // unreadable: initdb it is
  }
  writeTemplateFiles(template, data);
  return true;
}

/** The template's files written to `<data>.new`, then renamed to `data`. */
function writeTemplateFiles(template: Template, data: string): void {
  const tmp = `${data}.new`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { mode: 0o700 });
  try {
    for (const dir of template.index.dirs) mkdirSync(inside(tmp, dir), { recursive: true, mode: 0o700 });
    // Written one after the other on this thread: a few hundred files, most of them small.
    eachFile(template, (path, size, extents) => {
      const fd = openSync(inside(tmp, path), 'wx', 0o600);
      try {
        for (const [offset, bytes] of extents) {
          for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done, offset + done);
        }
        const end = extents.length ? extents[extents.length - 1][0] + extents[extents.length - 1][1].length : 0;
        if (end < size) ftruncateSync(fd, size); // the zeros at its end: a hole
      } finally {
        closeSync(fd);
      }
    });
    if (!existsSync(join(tmp, 'PG_VERSION'))) throw new Error('the template has no PG_VERSION');
    renameSync(tmp, data);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/**
 * The data directory `data` made from the template when it is missing or empty (a first start, or
 * one killed before it wrote anything): true if it was. False: it holds files already (a database,
 * or something that is not one, left for PGlite to refuse), or no template fits.
 */
export async function writeTemplateInto(data: string, settings: Record<string, string> = PGLITE_SETTINGS): Promise<boolean> {
  if (!clearedFor(data)) {
    preloaded = undefined;
    return false;
  }
  return extractTemplate(settings, data);
}

/**
 * `writeTemplateInto` done at once, blocking this thread some 100 ms: the CLI's main thread, as it
 * claims a new state directory (`cli/prestart.ts`), writes its database while the service's thread
 * boots and loads its modules; that thread, which the command then waits for, opens it as it is.
 */
export function writeTemplateIntoNow(data: string, settings: Record<string, string> = PGLITE_SETTINGS): boolean {
  return clearedFor(data) && extractTemplateNow(settings, data);
}

/** Whether `data` is missing or empty (then removed, for the template's files to be renamed into its place). */
function clearedFor(data: string): boolean {
  if (!isEmptyOrMissing(data)) return false;
  if (existsSync(data)) rmdirSync(data);
  return true;
}

function isEmptyOrMissing(dir: string): boolean {
  try {
    return readdirSync(dir).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw err;
  }
}

/** PostgreSQL settings as the `-c name=value` arguments PGlite passes to postgres and initdb. */
export function settingsParams(settings: Record<string, string>): string[] {
  return Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
}

/** The data directory `data` in the template's form (`TemplateIndex`), compressed. */
export function packTemplate(data: string): Uint8Array {
  const index: TemplateIndex = { dirs: [], files: [] };
  const chunks: Buffer[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(data, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        index.dirs.push(path);
        walk(path);
      } else if (entry.isFile()) {
        const bytes = readFileSync(join(data, path));
        const extents: number[] = [];
        for (let at = 0; at < bytes.length; at += PAGE) {
          const page = bytes.subarray(at, at + PAGE);
          if (!page.some((b) => b !== 0)) continue;
          const last = extents.length - 2;
          if (last >= 0 && extents[last] + extents[last + 1] === at) extents[last + 1] += page.length;
          else extents.push(at, page.length);
          chunks.push(page);
        }
        index.files.push([path, bytes.length, extents]);
      } else throw new Error(`not a file or directory in the template: ${path}`);
    }
  };
  walk('');
  const head = Buffer.from(JSON.stringify(index));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(head.length);
  const raw = Buffer.concat([length, head, ...chunks]);
  return brotliCompressSync(raw, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_LGWIN]: 24, [zlib.BROTLI_PARAM_SIZE_HINT]: raw.length } });
}
