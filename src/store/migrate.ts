import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.js';

const DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
// Any constant works; it only has to be the same in every process sharing the database.
export const MIGRATION_LOCK = 4242_0001;

export interface Migration { version: number; name: string; sql: string }

export function loadMigrations(): Migration[] {
  return readdirSync(DIR)
    .filter((f) => /^\d+_.+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.split('_')[0]), name: f, sql: readFileSync(DIR + f, 'utf8') }));
}

/**
 * Applies the numbered migrations not yet recorded, in order, in one transaction under an advisory
 * lock, so several processes starting at once on one PostgreSQL apply each migration exactly once.
 * Returns the names applied by this call.
 */
export async function migrate(db: Db): Promise<string[]> {
  const migrations = loadMigrations();
  // Every command and every `serve` starts here. When every migration is already recorded (all but
  // a first start or an upgrade), two reads decide it: no transaction, lock or DDL, and no wait
  // behind a newer version's process migrating the same database.
  if ((await pendingMigrations(db, migrations)).length === 0) return [];
  return db.tx(async (q) => {
    await q.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await q.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await q.query<{ version: number }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((r) => r.version));
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await q.query(m.sql);
      await q.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.name);
    }
    return applied;
    // Unbounded: a migration may build an index on a large table, or wait for another replica's.
  }, { unbounded: true });
}

/**
 * Migrations recorded in the database that this version does not have (a newer edgeplane migrated
 * it): a rolling upgrade's old replicas run on, and say so.
 */
export async function unknownMigrations(db: Pick<Db, 'query'>, migrations = loadMigrations()): Promise<number[]> {
  const known = new Set(migrations.map((m) => m.version));
  const { rows } = await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
  return rows.map((r) => r.version).filter((v) => !known.has(v));
}

/**
 * The migrations not recorded as applied (committed rows), by name; none: nothing is left to do.
 * The table is looked for where `CREATE TABLE` would put it, the first schema of the search path
 * that exists: one of the same name further along the path is another deployment's.
 */
export async function pendingMigrations(db: Pick<Db, 'query'>, migrations = loadMigrations()): Promise<string[]> {
  const { rows } = await db.query<{ present: boolean }>(
    "SELECT to_regclass(quote_ident(current_schema()) || '.schema_migrations') IS NOT NULL AS present",
  );
  if (!rows[0]?.present) return migrations.map((m) => m.name);
  const done = new Set((await db.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
  return migrations.filter((m) => !done.has(m.version)).map((m) => m.name);
}
