import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/migrate.js';
import { ENGINES, openTestDb, startServiceOnOwnDatabase } from '../helpers/service.js';

/** Columns holding object ids: compared byte by byte, whatever the database's default collation. */
const ID_COLUMNS = [
  ['objects', 'id'], ['objects', 'parent_id'], ['object_refs', 'from_id'], ['object_refs', 'to_id'],
  ['unique_keys', 'object_id'], ['jobs', 'id'], ['jobs', 'object_id'],
];

describe.each(ENGINES)('object ids on %s', (engine) => {
  it('every column holding an object id compares in the "C" collation', async () => {
    const { db, drop } = await openTestDb(engine);
    try {
      await migrate(db);
      for (const [table, column] of ID_COLUMNS) {
        const { rows } = await db.query<{ collname: string }>(
          `SELECT c.collname FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation
           WHERE a.attrelid = $1::regclass AND a.attname = $2`, [table, column]);
        expect({ table, column, collation: rows[0]?.collname }).toEqual({ table, column, collation: 'C' });
      }
    } finally {
      await drop();
    }
  });
});

/**
 * A database created with a linguistic default collation (ICU en-US, as many managed PostgreSQL
 * services create them): base62 ids would sort by letters and case there, not by creation.
 */
async function linguisticDatabase(admin: pg.Client, name: string): Promise<string> {
  const tries = [
    `CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'`,
    `CREATE DATABASE ${name} TEMPLATE template0 LC_COLLATE 'en_US.UTF-8' LC_CTYPE 'en_US.UTF-8'`,
  ];
  const errors: string[] = [];
  for (const sql of tries) {
    try {
      await admin.query(sql);
      return sql;
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  throw new Error(`this PostgreSQL server can make no database with a linguistic collation (built without ICU, no en_US locale): ${errors.join('; ')}`);
}

describe.runIf(ENGINES.includes('postgres'))('lists on a PostgreSQL database with a linguistic collation', () => {
  it('come newest first and page with before_id through every object exactly once', async () => {
    const svc = await startServiceOnOwnDatabase('ep_collation', linguisticDatabase);
    try {
      const c = await svc.account();
      const created: string[] = [];
      for (let i = 0; i < 60; i++) {
        const r = await c.post('/backends/failover', { backends: [], description: `n${i}` });
        expect(r.status).toBe(201);
        created.push(r.body.id);
      }
      const newestFirst = [...created].reverse();
      const whole = await c.get('/backends/failover?limit=100');
      expect(whole.body.backends.map((b: { id: string }) => b.id)).toEqual(newestFirst);
      const paged: string[] = [];
      for (let next: string | null = '/backends/failover?limit=7'; next;) {
        const page = await c.get(next.replace(/^https?:\/\/[^/]+/, ''));
        expect(page.status).toBe(200);
        paged.push(...page.body.backends.map((b: { id: string }) => b.id));
        next = page.body.next_page_uri;
      }
      expect(paged).toEqual(newestFirst);
    } finally {
      await svc.close();
    }
  }, 60_000);
});
