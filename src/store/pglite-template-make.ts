import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import pg from 'pg';
import { loadMigrations, migrate } from './migrate.js';
import { packTemplate, pgliteVersion, settingsParams, sha256, type TemplateMeta } from './pglite-template.js';
import { PoolDb } from './pool-db.js';

/**
 * Makes a template with initdb in a scratch directory, then migrates it (`migrate`, as every start
 * does) and packs the directory PGlite leaves at a clean shutdown (`packTemplate`), with what it
 * was made with. A new state directory then starts with its schema made: no DDL on a first
 * command, and no recovery on its first start. The migrations make no data of their own that must
 * differ between databases (the secrets' fingerprint key is made by the service at its start).
 *
 * Only the `postgres` database is kept (PGlite connects to it): `template0` and `template1` are
 * dropped, as edgeplane never creates a database on the embedded engine. And the WAL is switched
 * to a new segment before the last checkpoint, with old segments removed, not recycled: what
 * remains is that checkpoint, not the WAL of initdb and the migrations.
 */
export async function makeTemplate(settings: Record<string, string>): Promise<{ template: Uint8Array; meta: TemplateMeta }> {
  const params = settingsParams(settings);
  const scratch = mkdtempSync(join(tmpdir(), 'edgeplane-pglite-template-'));
  const data = join(scratch, 'pgdata');
  const pglite = new PGlite(data, { startParams: [...PGlite.defaultStartParams, ...params, '-c', 'wal_recycle=off'], initDbStartParams: params });
  try {
    await pglite.waitReady;
    const db = new PoolDb(new pg.Pool({ ...createPgConfig(pglite), max: 1 } as pg.PoolConfig), 'pglite', 'template', async () => {});
    const migrations = loadMigrations();
    await migrate(db);
    await db.close();
    await pglite.exec("UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')");
    for (const name of ['template0', 'template1']) await pglite.exec(`DROP DATABASE ${name}`);
    await pglite.query('SELECT pg_switch_wal()');
    await pglite.query('CHECKPOINT');
    await pglite.close();
    if (existsSync(join(data, 'postmaster.pid'))) throw new Error('PGlite did not shut the template down cleanly');
    withoutMaps(data);
    return {
      template: packTemplate(data),
      meta: { pglite: pgliteVersion(), settings, migrations: migrations.map((m) => ({ name: m.name, sha256: sha256(m.sql) })) },
    };
  } finally {
    if (!pglite.closed) await pglite.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * The free space maps and visibility maps (`<relfilenode>_fsm`, `_vm`) removed from a cleanly shut
 * down data directory: a fifth of its files, and every file costs a new state directory's first
 * command a file creation (some 0.4 ms each on the reference machine's disk). PostgreSQL takes a
 * missing map fork as an empty one (no free space recorded: an insert extends the table; no page
 * all-visible: an index-only scan reads the heap) and makes it again as it needs it (VACUUM).
 */
function withoutMaps(data: string): void {
  for (const entry of readdirSync(data, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && /^\d+_(fsm|vm)$/.test(entry.name)) rmSync(join(entry.parentPath, entry.name));
  }
}

