import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DirLock, LockHeldError } from '../../src/store/dir-lock.js';
import pg from 'pg';
import type { Db } from '../../src/store/db.js';
import { loadMigrations, migrate, MIGRATION_LOCK, pendingMigrations } from '../../src/store/migrate.js';
import { openPglite } from '../../src/store/pglite.js';
import { PGLITE_SETTINGS, pgliteVersion, readTemplateMeta, templateFits } from '../../src/store/pglite-template.js';
import { openPostgres } from '../../src/store/postgres.js';
import { ENGINES, openTestDb } from '../helpers/service.js';

/** Bytes a directory's files hold (their sizes) and take on disk (their blocks). */
function diskUse(dir: string): { size: number; allocated: number } {
  let size = 0;
  let allocated = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const st = statSync(join(entry.parentPath, entry.name));
    size += st.size;
    allocated += st.blocks * 512;
  }
  return { size, allocated };
}

describe('PGlite directory lock', () => {
  it("keeps the database files its owner's alone: pgdata/ is 0700, made so or tightened", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ep-mode-'));
    const db = await openPglite(dir);
    await db.close();
    expect(statSync(join(dir, 'pgdata')).mode & 0o777).toBe(0o700);
    chmodSync(join(dir, 'pgdata'), 0o755); // made by an older version
    const again = await openPglite(dir);
    await again.close();
    expect(statSync(join(dir, 'pgdata')).mode & 0o777).toBe(0o700);
  });

  it('refuses a second open in the same process too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ep-lock-'));
    const db = await openPglite(dir);
    try {
      await expect(openPglite(dir)).rejects.toBeInstanceOf(LockHeldError);
    } finally {
      await db.close();
    }
  });

  it('does not take over a lock whose process is alive', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ep-lock-'));
    writeFileSync(join(dir, 'lock'), JSON.stringify({ pid: process.ppid, host: (await import('node:os')).hostname(), started_at: 'earlier' }));
    await expect(openPglite(dir)).rejects.toThrow(`in use by process ${process.ppid}`);
  });

  it('takes over a lock file that stays unreadable (damaged, or its writer died before writing), but not a fresh one', async () => {
    const { utimesSync } = await import('node:fs');
    for (const garbage of ['garbage', '', '{"pid":']) {
      const dir = mkdtempSync(join(tmpdir(), 'ep-lock-'));
      const lock = join(dir, 'lock');
      writeFileSync(lock, garbage);
      // Just written: its writer may be between creating and writing it.
      expect(() => DirLock.acquire(dir)).toThrow(LockHeldError);
      const old = new Date(Date.now() - 5000);
      utimesSync(lock, old, old);
      const taken = DirLock.acquire(dir);
      expect(JSON.parse(readFileSync(lock, 'utf8')).pid).toBe(process.pid);
      taken.setUrl('http://127.0.0.1:1');
      expect(JSON.parse(readFileSync(lock, 'utf8'))).toMatchObject({ pid: process.pid, url: 'http://127.0.0.1:1' });
      taken.release();
      expect(existsSync(lock)).toBe(false);
    }
  });
});

describe('PGlite settings', () => {
  it('starts with an 8 MB buffer pool, not PostgreSQL\'s 128 MB: PGlite makes the whole pool resident at start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ep-settings-'));
    for (let run = 0; run < 2; run++) { // created, then reopened: the setting is given on every start
      const db = await openPglite(dir);
      try {
        const { rows } = await db.query<{ shared_buffers: string }>('SHOW shared_buffers');
        expect(rows).toEqual([{ shared_buffers: '8MB' }]);
      } finally {
        await db.close();
      }
    }
    // initdb made the database with the same setting (it would probe its own 128 MB default).
    expect(readFileSync(join(dir, 'pgdata', 'postgresql.conf'), 'utf8')).toMatch(/^shared_buffers = 8MB\b/m);
  });

  it('a command that only reads gets a 2 MB pool on a small database, 8 MB once it has grown; one session\'s connections either way', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ep-settings-'));
    const show = async (readsOnly: boolean) => {
      const db = await openPglite(dir, { readsOnly });
      try {
        const { rows } = await db.query<{ shared_buffers: string; max_connections: string }>(
          "SELECT current_setting('shared_buffers') AS shared_buffers, current_setting('max_connections') AS max_connections");
        return rows[0];
      } finally {
        await db.close();
      }
    };
    expect(await show(true)).toEqual({ shared_buffers: '2MB', max_connections: '10' });
    expect(await show(false)).toEqual({ shared_buffers: '8MB', max_connections: '10' }); // apply, serve, watch, the agent
    // Grown past 16 MB (a table of 20 MB): the next run once gets the full pool.
    const db = await openPglite(dir);
    try {
      await db.query("CREATE TABLE filler AS SELECT g, repeat('x', 1000) AS pad FROM generate_series(1, 20000) g");
    } finally {
      await db.close();
    }
    expect(await show(true)).toEqual({ shared_buffers: '8MB', max_connections: '10' });
  });
});

describe('new embedded databases', () => {
  it('the committed template fits the installed PGlite, the engine\'s settings and the migrations (else: npm run pglite-template)', () => {
    const meta = readTemplateMeta();
    expect(meta, 'src/generated/pglite-template.json').toMatchObject({ pglite: pgliteVersion(), settings: PGLITE_SETTINGS });
    // Every migration is in it: a new database needs no DDL.
    expect(meta!.migrations!.map((m) => m.name)).toEqual(loadMigrations().map((m) => m.name));
    expect(templateFits(meta, PGLITE_SETTINGS)).toBe(true);
    // Another PGlite or other settings: not used (initdb makes the database instead).
    expect(templateFits({ ...meta!, pglite: '0.0.1' }, PGLITE_SETTINGS)).toBe(false);
    expect(templateFits(meta, { ...PGLITE_SETTINGS, shared_buffers: '32MB' })).toBe(false);
    expect(templateFits(undefined, PGLITE_SETTINGS)).toBe(false);
    // A migration changed since the template was made: not used; one added since: used (migrate applies it).
    const migrations = loadMigrations();
    expect(templateFits(meta, PGLITE_SETTINGS, migrations.map((m, i) => (i === 0 ? { ...m, sql: m.sql + '\n-- changed' } : m)))).toBe(false);
    expect(templateFits(meta, PGLITE_SETTINGS, [...migrations, { version: 999, name: '999_later.sql', sql: 'SELECT 1' }])).toBe(true);
  });

  it('start from the template, not initdb: two new state directories share its system identifier', async () => {
    // initdb gives every cluster a new random identifier; a loaded template keeps its own.
    const ids: string[] = [];
    for (const dir of [mkdtempSync(join(tmpdir(), 'ep-tpl-')), mkdtempSync(join(tmpdir(), 'ep-tpl-')), null]) {
      const db = await openPglite(dir);
      try {
        await migrate(db);
        const { rows } = await db.query<{ id: string }>('SELECT system_identifier::text AS id FROM pg_control_system()');
        ids.push(rows[0].id);
        if (dir) expect(readFileSync(join(dir, 'pgdata', 'PG_VERSION'), 'utf8').trim()).toMatch(/^\d+$/);
      } finally {
        await db.close();
      }
    }
    expect(new Set(ids).size).toBe(1);
  });

  it('a new state directory gets the template\'s files written out, owner-only; what a killed first start left half-written is started again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ep-tpl-'));
    // A first start killed while it wrote the files: only the sibling directory is there.
    mkdirSync(join(dir, 'pgdata.new', 'base'), { recursive: true });
    writeFileSync(join(dir, 'pgdata.new', 'base', 'junk'), 'half');
    const db = await openPglite(dir);
    try {
      await migrate(db);
      expect((await db.query<{ n: number }>('SELECT 1 AS n')).rows[0].n).toBe(1);
      // The template holds the one database PGlite connects to (not template0/template1): less to write on a first start.
      expect((await db.query<{ datname: string }>('SELECT datname FROM pg_database')).rows.map((r) => r.datname)).toEqual(['postgres']);
    } finally {
      await db.close();
    }
    expect(existsSync(join(dir, 'pgdata.new'))).toBe(false);
    expect(statSync(join(dir, 'pgdata')).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'pgdata', 'PG_VERSION')).mode & 0o077).toBe(0);
    // Zero pages were not written (holes): the directory takes on disk what its database holds,
    // far less than its files' sizes (a 16 MB WAL segment, mostly empty, and empty pages).
    const { size, allocated } = diskUse(join(dir, 'pgdata'));
    expect(allocated).toBeLessThan(size / 2);
  });
  it('a new state directory has no free space or visibility maps (fewer files to write); the engine makes them as it needs them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ep-tpl-'));
    const maps = () => readdirSync(join(dir, 'pgdata'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && /_(fsm|vm)$/.test(e.name)).length;
    let db = await openPglite(dir);
    try {
      expect(maps()).toBe(0);
      await migrate(db);
      // Writes, deletes and index-only reads on a table and the catalog, then VACUUM, which makes the maps.
      await db.query('CREATE TABLE t (id int PRIMARY KEY, v text)');
      await db.query("INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 2000) g");
      await db.query('DELETE FROM t WHERE id % 2 = 0');
      await db.query('VACUUM t');
      await db.query("INSERT INTO t SELECT g * 2, 'y' FROM generate_series(1, 1000) g");
      expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM t WHERE id > 0')).rows[0].n).toBe(2000);
      expect((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_class WHERE relname = 't'")).rows[0].n).toBe(1);
      await db.query('VACUUM');
      expect(maps()).toBeGreaterThan(0);
    } finally {
      await db.close();
    }
    db = await openPglite(dir);
    try {
      expect((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM t WHERE v = 'y'")).rows[0].n).toBe(1000);
    } finally {
      await db.close();
    }
  });
});

describe.each(ENGINES)('migrations on %s', (engine) => {
  it('applies each migration once, however often and however concurrently it runs', async () => {
    const { db, drop } = await openTestDb(engine);
    try {
      // All of them on PostgreSQL; none on a new PGlite database, whose template holds them.
      const all = await pendingMigrations(db);
      expect(all.length).toBe(engine === 'postgres' ? loadMigrations().length : 0);
      const runs = await Promise.all([migrate(db), migrate(db), migrate(db)]);
      expect(runs.flat().sort()).toEqual(all.sort());
      expect(await migrate(db)).toEqual([]);
      const { rows } = await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(loadMigrations().map((m) => m.version));
    } finally {
      await drop();
    }
  });
});

describe('opening a damaged embedded database', () => {
  it('names its directory in the error and releases the lock', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edgeplane-damaged-'));
    await (await openPglite(dir)).close();
    writeFileSync(join(dir, 'pgdata', 'PG_VERSION'), 'garbage\n');
    const says = `cannot open the embedded database in ${join(dir, 'pgdata')}: `;
    await expect(openPglite(dir)).rejects.toThrow(says);
    // Released: a second attempt gets the same answer, not "in use".
    await expect(openPglite(dir)).rejects.toThrow(says);
  });
});

describe('opening PostgreSQL', () => {
  it('a server that cannot be reached is named in the error, its password hidden', async () => {
    const err = await openPostgres('postgres://edge:s3cret@127.0.0.1:1/db').catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^cannot use PostgreSQL at postgres:\/\/edge:\*\*\*@127\.0\.0\.1:1\/db: .*ECONNREFUSED/);
    expect((err as Error).message).not.toContain('s3cret');
  });

  it('a DATABASE_URL that is not a PostgreSQL URL says so, and what one looks like', async () => {
    for (const [url, why] of [['not a url', 'it does not parse as a URL'], ['mysql://u@h/db', 'scheme mysql:']]) {
      const err = await openPostgres(url).catch((e: Error) => e);
      expect((err as Error).message).toBe(`DATABASE_URL is not a PostgreSQL URL (postgres://user[:password]@host[:port]/database): ${why}`);
    }
  });
});

describe.each(ENGINES)('starting on a migrated database on %s', (engine) => {
  it('only reads: no transaction, lock or DDL, and nothing applied', async () => {
    const { db, drop } = await openTestDb(engine);
    try {
      await migrate(db);
      const sent: string[] = [];
      let transactions = 0;
      const watched: Db = {
        engine: db.engine, describe: db.describe, close: () => db.close(),
        query: (sql, params) => { sent.push(sql); return db.query(sql, params); },
        tx: (fn) => { transactions++; return db.tx(fn); },
      };
      expect(await migrate(watched)).toEqual([]);
      expect(transactions).toBe(0);
      expect(sent.every((q) => /^SELECT /.test(q))).toBe(true);
    } finally {
      await drop();
    }
  });
});

describe.runIf(ENGINES.includes('postgres'))('migrations on PostgreSQL, a lock held by another', () => {
  it('a process whose migrations are all applied starts while another holds the migration lock', async () => {
    const { db, drop } = await openTestDb('postgres');
    const holder = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await holder.connect();
    try {
      await migrate(db);
      // What a newer version's process holds while it applies its migrations to the database.
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const blocked = new Promise((r) => setTimeout(() => r('still waiting after 5 s'), 5000).unref());
      expect(await Promise.race([migrate(db), blocked])).toEqual([]);
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
      await drop();
    }
  });

  it('a schema_migrations further along the search path is not this schema\'s: its migrations are applied', async () => {
    const url = process.env.DATABASE_URL!;
    const [first, other] = ['ep_mig_a_', 'ep_mig_b_'].map((p) => p + Math.random().toString(36).slice(2, 10));
    const setup = new pg.Client({ connectionString: url });
    await setup.connect();
    try {
      const migrated = await openPostgres(url, { schema: other });
      await migrate(migrated);
      await migrated.close();
      await setup.query(`CREATE SCHEMA ${first}`);
      const db = await openPostgres(url);
      try {
        const applied = await db.tx(async (q) => {
          await q.query(`SET LOCAL search_path = ${first}, ${other}`);
          return migrate({ ...db, query: (sql, params) => q.query(sql, params), tx: (fn) => fn(q) } as Db);
        });
        expect(applied.sort()).toEqual(loadMigrations().map((m) => m.name).sort());
      } finally {
        await db.close();
      }
      const { rows } = await setup.query(`SELECT count(*)::int AS n FROM ${first}.schema_migrations`);
      expect(rows[0].n).toBe(loadMigrations().length);
    } finally {
      await setup.query(`DROP SCHEMA IF EXISTS ${first} CASCADE; DROP SCHEMA IF EXISTS ${other} CASCADE`);
      await setup.end();
    }
  });
});
