import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flatDb, RunAgainFromStart, type Db } from '../../src/store/db.js';
import { ENGINES, openTestDb } from '../helpers/service.js';

/**
 * `flatDb`: an operation run inside a keyed request's transaction without savepoints. After a
 * database error its transaction is aborted, so any further use says to run the whole again.
 */
describe.each(ENGINES)('flatDb (%s)', (engine) => {
  let db: Db;
  let drop: () => Promise<void>;
  beforeAll(async () => ({ db, drop } = await openTestDb(engine)));
  afterAll(() => drop?.());

  it('runs its transactions in the outer one; after a database error every further use throws RunAgainFromStart with that error', async () => {
    await db.query('CREATE TABLE IF NOT EXISTS flat_t (n int)');
    const seen: unknown[] = [];
    await expect(db.tx(async (q) => {
      const flat = flatDb(q, db);
      await flat.tx(async (inner) => inner.query('INSERT INTO flat_t VALUES (1)'));
      await flat.tx(async (inner) => inner.query('SELECT 1 / 0')).catch((err: unknown) => seen.push(err));
      // An operation that retries its own transaction on this error (as on a deadlock) cannot here.
      await flat.tx(async (inner) => inner.query('SELECT 1')).catch((err: unknown) => seen.push(err));
      await flat.query('SELECT 1').catch((err: unknown) => seen.push(err));
      throw seen.at(-1);
    })).rejects.toBeInstanceOf(RunAgainFromStart);
    expect((seen[0] as { code: string }).code).toBe('22012');
    expect(seen[1]).toBeInstanceOf(RunAgainFromStart);
    expect((seen[1] as RunAgainFromStart).cause).toBe(seen[0]);
    // All or nothing: the insert of the first operation went with the outer transaction.
    expect((await db.query<{ n: string }>('SELECT count(*) AS n FROM flat_t')).rows[0].n).toBe('0');
  });

  it('a service error (no SQLSTATE) does not mark it failed', async () => {
    await db.tx(async (q) => {
      const flat = flatDb(q, db);
      await expect(flat.tx(async () => { throw new Error('refused by the service'); })).rejects.toThrow('refused by the service');
      expect((await flat.query<{ one: number }>('SELECT 1 AS one')).rows[0].one).toBe(1);
    });
  });
});
