// The last step of `npm run build` (scripts/build.mjs): the compiled dist/ bundled by esbuild into
// its three entry points (the CLI, and the modules its worker threads run) and shared chunks, with
// the dependencies they import inside. Loading a command then reads a few files instead of
// hundreds (fastify, ajv, yaml and their dependencies are some 400 CommonJS files, each resolved,
// read and compiled on its own, and again in the embedded service's thread). `import()` stays
// lazy: a dynamically imported module is a chunk loaded when the import runs.
//
// Every output file is one directory below dist/ (the entries are dist/<dir>/<name>.js, the chunks
// dist/chunks/), so a module's own `import.meta.url` is rewritten to the URL of the file it was
// compiled to (`new URL('../store/migrate.js', import.meta.url)`): paths it reads beside itself
// (migrations, the status page's files, the package's package.json) stay where they were. The
// other compiled modules are removed; what they read at run time is left in place.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';

// client/transport.js: the HTTP client, loaded by the CLI when a command talks to a deployment (and by a test, from dist/).
export const ENTRIES = ['cli/main.js', 'cli/early.js', 'embedded/embedded-service.js', 'client/http-page-reader.js', 'client/transport.js'];

/**
 * Packages left outside the bundle, loaded from node_modules as before: PGlite finds its
 * WebAssembly and file bundle beside its own modules; pg's optional bindings (native, Cloudflare)
 * are not installed; pino starts its transports as workers by file name; ioredis and
 * @fastify/swagger read files by `__dirname` (only `serve` loads them). And the CommonJS packages
 * the code loads with `import()` (undici, prom-client): a split bundle's chunk of one exports only
 * its `default`, where Node also gives the named exports it finds.
 */
const EXTERNAL = [
  '@electric-sql/pglite', '@electric-sql/pglite/*', 'pg-native', 'pg-cloudflare', 'pino', 'pino/*', 'thread-stream',
  'ioredis', '@fastify/swagger', 'undici', 'prom-client',
];

/**
 * @param {string} dist the compiled tree (tsc's output, assets copied)
 * @param {{ esbuild?: typeof import('esbuild') }} [opts]
 */
export async function bundle(dist, opts = {}) {
  const esbuild = opts.esbuild ?? (await import('esbuild'));
  const out = mkdtempSync(join(tmpdir(), 'edgeplane-bundle-'));
  try {
    const own = {
      name: 'own-module-urls',
      setup(build) {
        build.onLoad({ filter: /\.js$/ }, (args) => {
          const rel = relative(dist, args.path);
          if (args.path.endsWith(`${sep}pg${sep}lib${sep}stream.js`)) return { contents: withoutWorkersProbe(readFileSync(args.path, 'utf8')), loader: 'js' };
          if (rel.startsWith('..') || rel.split(sep)[0] === 'node_modules') return undefined;
          let code = readFileSync(args.path, 'utf8');
          // yaml, loaded on first use through createRequire (every command that reads manifests
          // does): bundled, still evaluated on first use. The others loaded that way (node-forge,
          // ajv's compiler, the CEL library, tldts, saxes) stay out: most runs never load them.
          code = code.replace(/createRequire\(import\.meta\.url\)\((['"]yaml['"])\)/g, 'require($1)');
          code = code.replaceAll('import.meta.url', `new URL(${JSON.stringify('../' + rel.split(sep).join('/'))}, import.meta.url).href`);
          return { contents: code, loader: 'js' };
        });
      },
    };
    const { metafile } = await esbuild.build({
      metafile: true,
      absWorkingDir: dist,
      entryPoints: ENTRIES.map((e) => join(dist, e)),
      outbase: dist,
      outdir: out,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      chunkNames: 'chunks/[name]-[hash]',
      external: EXTERNAL,
      plugins: [own],
      // CommonJS dependencies require Node's modules (and the externals above) by name.
      banner: { js: "import { createRequire as __edgeplaneRequire } from 'node:module'; const require = __edgeplaneRequire(import.meta.url);" },
      legalComments: 'none',
      // Whitespace and syntax only (names kept, for stack traces): each thread reads, decodes and
      // parses about 40% less text (the service's modules: 6.1 MB of chunks before).
      minifyWhitespace: true,
      minifySyntax: true,
      logLevel: 'warning',
    });
    for (const f of walk(out)) {
      const code = readFileSync(join(out, f), 'utf8');
      // A CommonJS package loaded with `import()` and bundled: its named exports would be undefined.
      if (/^export default require_\w+\(\);\s*$/m.test(code)) {
        throw new Error(`bundle: ${f} is a CommonJS package loaded with import(): add it to EXTERNAL in scripts/bundle.mjs`);
      }
      // A bundled dependency that finds its files by `__dirname`: undefined in an ES module (comments aside).
      if (code.split('\n').some((line) => !/^\s*(\*|\/\/|\/\*)/.test(line) && /\b__(dirname|filename)\b/.test(line))) {
        throw new Error(`bundle: ${f} uses __dirname or __filename (a dependency reading files beside itself): add it to EXTERNAL in scripts/bundle.mjs`);
      }
    }
    // The compiled modules now inside the bundle (the generated validators and static files stay).
    for (const input of Object.keys(metafile.inputs)) {
      const f = relative(dist, join(dist, input));
      if (!f.startsWith('..') && f.split(sep)[0] !== 'node_modules' && f.split(sep)[0] !== 'generated') rmSync(join(dist, f));
    }
    removeEmptyDirs(dist);
    cpSync(out, dist, { recursive: true });
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/**
 * pg asks whether it runs in Cloudflare Workers when it loads, by making a `Response`: on Node 20,
 * whose `navigator` is undefined, that loads Node's internal fetch (undici) into the thread, some
 * 30 ms of each embedded start. This package runs on Node only: the probe's second test is dropped.
 */
function withoutWorkersProbe(code) {
  const probe = "if (typeof Response === 'function') {";
  if (!code.includes(probe)) return code; // pg changed: bundled as it is
  return code.replace(probe, 'if (false) {');
}

function removeEmptyDirs(dir) {
  for (const f of readdirSync(dir)) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) {
      removeEmptyDirs(p);
      if (readdirSync(p).length === 0) rmdirSync(p);
    }
  }
}

function* walk(root, dir = '') {
  for (const f of readdirSync(join(root, dir))) {
    const rel = join(dir, f);
    if (statSync(join(root, rel)).isDirectory()) yield* walk(root, rel);
    else yield rel;
  }
}
