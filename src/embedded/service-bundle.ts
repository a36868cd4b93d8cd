import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What a bundle was built from (each input's content hash, by path relative to the project) and the bundle's own hash. */
interface BundleMeta { esbuild: string; entry: string; inputs: Record<string, string>; bundle: string }

export interface BundleOptions {
  /** The module to bundle (TypeScript; its imports of packages stay imports). */
  entry: string;
  /** Where bundles are kept (default: node_modules/.cache/edgeplane of this project). */
  cacheDir?: string;
}

/**
 * A JavaScript bundle of `entry` and every module of ours it imports, built with esbuild the first
 * time and again whenever one of those modules changes, kept in node_modules/.cache/edgeplane. A
 * worker thread that runs the bundle needs no TypeScript loader: the embedded service's thread
 * starts in about the time the main thread takes to load the reconciler, instead of about 150 ms
 * and 30 MB more (tsx registers a loader thread of its own in every worker, and every module goes
 * through it). Checking that a bundle is current reads and hashes its inputs (about 5 ms);
 * building one takes about 150 ms.
 *
 * Each module's `import.meta.url` is rewritten to its own source file's URL (relative to the
 * bundle, so a moved checkout still works): the service finds its migrations and generated files
 * next to its sources, as it does unbundled. Returns the bundle's path, or undefined when no
 * bundle can be had (esbuild missing, nowhere to write): the caller runs the sources with tsx.
 */
export async function serviceBundle(opts: BundleOptions): Promise<string | undefined> {
  const entry = resolve(opts.entry);
  const dir = opts.cacheDir ?? defaultCacheDir();
  if (dir === undefined) return undefined;
  const name = relative(ROOT, entry).replace(/[^A-Za-z0-9]+/g, '-').replace(/^-+/, '');
  const file = join(dir, `${name}.mjs`);
  const metaFile = `${file}.json`;
  if (current(file, metaFile, entry)) return file;
  try {
    await build(entry, file, metaFile);
    return file;
  } catch {
    return undefined;
  }
}

/**
 * node_modules/.cache/edgeplane of this project; without a node_modules of its own (edgeplane
 * installed as a dependency, its packages hoisted), a directory of this user's in the system's
 * temporary directory — made 0700, and used only while it is this user's and no one else may
 * write in it: a bundle planted there by another user would run as this one. Undefined: no cache
 * (the sources run through tsx).
 */
function defaultCacheDir(): string | undefined {
  const modules = join(ROOT, 'node_modules');
  if (existsSync(modules)) return join(modules, '.cache', 'edgeplane');
  const uid = process.getuid?.();
  const dir = join(tmpdir(), `edgeplane-cache-${uid ?? 'user'}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o022) !== 0) return undefined;
    return dir;
  } catch {
    return undefined;
  }
}

const hash = (path: string) => createHash('sha256').update(readFileSync(path)).digest('base64url');

/**
 * Whether the bundle exists, is the file that was built (its own hash), and every input still has
 * the content it was built from (the entry among them: a record of no inputs vouches for nothing).
 */
function current(file: string, metaFile: string, entry: string): boolean {
  try {
    if (!existsSync(file)) return false;
    const meta = JSON.parse(readFileSync(metaFile, 'utf8')) as BundleMeta;
    if (meta.entry !== relative(ROOT, entry) || !(meta.entry in meta.inputs) || hash(file) !== meta.bundle) return false;
    for (const path in meta.inputs) if (hash(join(ROOT, path)) !== meta.inputs[path]) return false;
    return true;
  } catch {
    return false;
  }
}

async function build(entry: string, file: string, metaFile: string): Promise<void> {
  const esbuild = await import('esbuild');
  const outDir = dirname(file);
  const result = await esbuild.build({
    entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', target: 'node20',
    packages: 'external', write: false, metafile: true, logLevel: 'silent', outfile: file, absWorkingDir: ROOT,
    plugins: [{
      name: 'own-import-meta-url',
      setup(b) {
        b.onLoad({ filter: /\.(ts|mjs|js)$/ }, (args) => {
          const source = readFileSync(args.path, 'utf8');
          if (!source.includes('import.meta.url')) return undefined;
          const own = `new URL(${JSON.stringify(relative(outDir, args.path).split('\\').join('/'))}, import.meta.url).href`;
          return { contents: source.replaceAll('import.meta.url', own), loader: args.path.endsWith('.ts') ? 'ts' : 'js' };
        });
      },
    }],
  });
  const inputs: Record<string, string> = {};
  for (const input of Object.keys(result.metafile.inputs)) inputs[input] = hash(join(ROOT, input));
  const text = result.outputFiles[0].text;
  const meta: BundleMeta = { esbuild: esbuild.version, entry: relative(ROOT, entry), inputs, bundle: createHash('sha256').update(text).digest('base64url') };
  mkdirSync(outDir, { recursive: true });
  // Written aside and renamed: a process that starts meanwhile sees the old bundle or the new one.
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  writeFileSync(`${tmp}.json`, JSON.stringify(meta, null, 2));
  renameSync(tmp, file);
  renameSync(`${tmp}.json`, metaFile);
}
