import { describe, expect, it } from 'vitest';
import { ENGINES, openTestDb } from '../helpers/service.js';

describe.each(ENGINES)('prepared statements on %s', (engine) => {
  it('answer on the pool and in a transaction, fail cleanly, and give their connection back', async () => {
    const { db, drop } = await openTestDb(engine);
    try {
      const sql = 'SELECT $1::int + 1 AS n';
      expect((await db.query<{ n: number }>(sql, [41], { prepared: true })).rows).toEqual([{ n: 42 }]);
      // Bad input fails the query that sent it, many times over: more failures than the pool has
      // connections, so a connection kept by a failed query would leave the last ones waiting.
      for (let i = 0; i < 25; i++) {
        await expect(db.query(sql, ['not a number'], { prepared: true })).rejects.toMatchObject({ code: '22P02' });
      }
      const all = await Promise.all(Array.from({ length: 25 }, (_, i) => db.query<{ n: number }>(sql, [i], { prepared: true })));
      expect(all.map((r) => r.rows[0].n)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
      const inTx = await db.tx(async (q) => {
        const a = await q.query<{ n: number }>(sql, [1], { prepared: true });
        const b = await q.query<{ n: number }>(sql, [2], { prepared: true });
        return [a.rows[0].n, b.rows[0].n, a.rowCount];
      });
      expect(inTx).toEqual([2, 3, 1]);
      await expect(db.tx((q) => q.query(sql, [null, 'extra'], { prepared: true }))).rejects.toThrow();
      expect((await db.query<{ n: number }>(sql, [9], { prepared: true })).rows[0].n).toBe(10);
    } finally {
      await drop();
    }
  });
});

describe.each(ENGINES)('a statement the server refuses, on %s', (engine) => {
  it('fails alone: the statements after it get their own answers', async () => {
    const { db, drop } = await openTestDb(engine);
    try {
      const answers: unknown[] = [];
      for (let i = 0; i < 4; i++) {
        answers.push(await db.query<{ n: number }>('SELECT $1::int AS n', [i % 2 ? String(i) : 'x']).then((r) => r.rows[0].n, (e: { code?: string; message: string }) => e.code ?? e.message));
      }
      answers.push(await db.query<{ n: number }>('SELECT 7 AS n').then((r) => r.rows[0].n));
      expect(answers).toEqual(['22P02', 1, '22P02', 3, 7]);
    } finally {
      await drop();
    }
  });
});
