import { describe, expect, it } from 'vitest';
import { openingDb, type Db } from '../../src/store/db.js';

const fake = (log: string[]): Db => ({
  engine: 'pglite', describe: 'embedded:/x',
  query: async (sql) => { log.push(sql); return { rows: [], rowCount: 0 }; },
  tx: async (fn) => fn({ query: async (sql) => { log.push(`tx ${sql}`); return { rows: [], rowCount: 0 }; } }),
  close: async () => { log.push('close'); },
});

describe('a database still opening (openingDb)', () => {
  it('queries wait for it, in order, and then go to it; it is named by what it opened', async () => {
    const log: string[] = [];
    let open!: (db: Db) => void;
    const db = openingDb(new Promise<Db>((r) => (open = r)), 'pglite', 'pglite: opening');
    expect(db.describe).toBe('pglite: opening');
    const first = db.query('SELECT 1');
    const second = db.tx((q) => q.query('SELECT 2'));
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual([]);
    open(fake(log));
    await Promise.all([first, second]);
    await db.query('SELECT 3');
    expect(log).toEqual(['SELECT 1', 'tx SELECT 2', 'SELECT 3']);
    expect(db.describe).toBe('embedded:/x');
    await db.close();
    expect(log.at(-1)).toBe('close');
  });

  it('a failed open fails every query with its error; closing it is a no-op', async () => {
    const failed = Promise.reject(new Error('cannot open the embedded database in /x: bad'));
    const db = openingDb(failed, 'pglite', 'pglite: opening');
    await expect(db.query('SELECT 1')).rejects.toThrow('cannot open the embedded database in /x');
    await expect(db.tx(async () => 1)).rejects.toThrow('cannot open the embedded database in /x');
    await expect(db.close()).resolves.toBeUndefined();
  });
});
