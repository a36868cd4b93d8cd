import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, normalize, sep } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import pg from 'pg';
import { loadMigrations, migrate, type Migration } from './migrate.js';
import { PoolDb } from './pool-db.js';

/**
 * A new embedded database starts from a template: a data directory made once by PGlite's initdb
 * (with the engine's settings) and migrated, committed as a gzip tarball and loaded with `loadDataDir`. Without
 * it, the first command on a new state directory runs initdb, which PGlite does in a second
 * WebAssembly instance, far slower and with about twice the peak memory of loading the template
 * (bench/README.md). Tests open many in-memory databases and gain the same.
 *
 * The template is used only when it was made by the PGlite version installed and with the same
 * settings (`pglite-template.json`); otherwise initdb runs as before, and a test fails until
 * `npm run pglite-template` writes a new one.
 */
const HERE = dirname(fileURLToPath(import.meta.url));
export const TEMPLATE_TARBALL = join(HERE, '..', 'generated', 'pglite-template.tgz');
export const TEMPLATE_META = join(HERE, '..', 'generated', 'pglite-template.json');

/** `migrations`: those applied in the template, each with its SQL's SHA-256. */
export interface TemplateMeta { pglite: string; settings: Record<string, string>; migrations?: { name: string; sha256: string }[] }

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

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

let cached: { settings: string; blob: Blob | undefined } | undefined;

/** The template to load into a new database, or undefined (initdb makes it) when there is none that fits. */
export function templateFor(settings: Record<string, string>): Blob | undefined {
  const key = JSON.stringify(settings);
  if (cached?.settings !== key) {
    let blob: Blob | undefined;
    try {
      if (templateFits(readTemplateMeta(), settings)) blob = new Blob([readFileSync(TEMPLATE_TARBALL)]);
    } catch {
      blob = undefined; // unreadable: initdb it is
    }
    cached = { settings: key, blob };
  }
  return cached.blob;
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
  if (!templateFits(readTemplateMeta(), settings)) return false;
  let tar: Buffer;
  try {
    tar = gunzipSync(readFileSync(TEMPLATE_TARBALL));
  } catch {
    return false; // unreadable: initdb it is
  }
  const tmp = `${data}.new`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { mode: 0o700 });
  const writes: Promise<void>[] = [];
  try {
    for (let off = 0; off + 512 <= tar.length;) {
      const field = (at: number, len: number) => tar.subarray(off + at, off + at + len).toString('utf8').replace(/\0[^]*$/, '');
      const name = field(0, 100);
      if (!name) break;
      const size = parseInt(field(124, 12).trim() || '0', 8);
      const type = field(156, 1) || '0';
      const prefix = tar.subarray(off + 257, off + 263).toString('latin1').startsWith('ustar') ? field(345, 155) : '';
      const rel = normalize((prefix ? `${prefix}/${name}` : name).replace(/^\/+/, ''));
      if (rel === '..' || rel.startsWith(`..${sep}`)) throw new Error(`template entry outside the data directory: ${rel}`);
      const path = join(tmp, rel);
      if (type === '5') mkdirSync(path, { recursive: true, mode: 0o700 });
      else if (type === '0') writes.push(writeFile(path, tar.subarray(off + 512, off + 512 + size), { mode: 0o600 }));
      off += 512 + Math.ceil(size / 512) * 512;
    }
    // Written at once: the thread pool makes a thousand small files' system calls in parallel.
    await Promise.all(writes);
    if (!existsSync(join(tmp, 'PG_VERSION'))) throw new Error('the template has no PG_VERSION');
    renameSync(tmp, data);
    return true;
  } catch (err) {
    await Promise.allSettled(writes);
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** PostgreSQL settings as the `-c name=value` arguments PGlite passes to postgres and initdb. */
export function settingsParams(settings: Record<string, string>): string[] {
  return Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
}

/**
 * Makes a template with initdb, then migrates it (`migrate`, as every start does): a gzip tarball
 * of a new data directory, and what it was made with. A new state directory then starts with its
 * schema made: no DDL on a first command. The migrations make no data of their own that must
 * differ between databases (the secrets' fingerprint key is made by the service at its start).
 */
export async function makeTemplate(settings: Record<string, string>): Promise<{ tarball: Uint8Array; meta: TemplateMeta }> {
  const params = settingsParams(settings);
  const pglite = new PGlite('memory://', { startParams: [...PGlite.defaultStartParams, ...params], initDbStartParams: params });
  try {
    await pglite.waitReady;
    const db = new PoolDb(new pg.Pool({ ...createPgConfig(pglite), max: 1 } as pg.PoolConfig), 'pglite', 'template', async () => {});
    const migrations = loadMigrations();
    await migrate(db);
    await db.close();
    await pglite.query('CHECKPOINT');
    const dump = await pglite.dumpDataDir('gzip');
    return {
      tarball: new Uint8Array(await dump.arrayBuffer()),
      meta: { pglite: pgliteVersion(), settings, migrations: migrations.map((m) => ({ name: m.name, sha256: sha256(m.sql) })) },
    };
  } finally {
    await pglite.close();
  }
}
