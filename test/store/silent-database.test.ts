import { createServer, connect, type Server, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/store/postgres.js';
import { ENGINES } from '../helpers/service.js';

/**
 * A TCP proxy to PostgreSQL that can fall silent: connections stay open, nothing goes through (a
 * network partition, a stalled host), until it speaks again.
 */
async function silenceableProxy(target: { host: string; port: number }): Promise<{ port: number; silent: boolean; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const state = { port: 0, silent: false, close: async () => {} };
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('error', () => {});
    client.on('close', () => sockets.delete(client));
    if (state.silent) return; // accepted, never answered
    const upstream = connect(target.port, target.host);
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    // While silent, bytes either way are swallowed.
    client.on('data', (d) => { if (!state.silent) upstream.write(d); });
    upstream.on('data', (d) => { if (!state.silent) client.write(d); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.port = (server.address() as { port: number }).port;
  state.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  };
  return state;
}

describe.runIf(ENGINES.includes('postgres'))('a PostgreSQL that stops answering', () => {
  it('fails statements and connections within their bounds, and the pool recovers once it answers again', async () => {
    const url = new URL(process.env.DATABASE_URL!);
    const proxy = await silenceableProxy({ host: url.hostname, port: Number(url.port || 5432) });
    const via = new URL(url);
    via.host = `127.0.0.1:${proxy.port}`;
    const db = await openPostgres(via.toString(), { max: 2, connectTimeoutMs: 1_500, queryTimeoutMs: 1_000 });
    try {
      expect((await db.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
      proxy.silent = true;
      // A statement on a pooled connection gets no answer: it fails, and its connection is dropped.
      await expect(db.query('SELECT 2')).rejects.toThrow(/Query read timeout/);
      // Every connection is taken by a statement that gets no answer, then a new one cannot be made.
      const stuck = await Promise.allSettled([db.query('SELECT 3'), db.query('SELECT 4'), db.query('SELECT 5')]);
      expect(stuck.every((r) => r.status === 'rejected')).toBe(true);
      expect(stuck.map((r) => (r as PromiseRejectedResult).reason.message).join('\n')).toMatch(/Query read timeout|timeout exceeded when trying to connect/);
      await expect(db.tx(async (q) => q.query('SELECT 6'))).rejects.toThrow(/timeout/);
      proxy.silent = false;
      // Back: the next statements are answered (new connections; the stalled ones were dropped).
      for (let i = 0; i < 4; i++) expect((await db.query<{ n: number }>('SELECT $1::int AS n', [i])).rows).toEqual([{ n: i }]);
      expect((await db.tx(async (q) => (await q.query<{ n: number }>('SELECT 7 AS n')).rows[0].n))).toBe(7);
    } finally {
      await db.close().catch(() => {});
      await proxy.close();
    }
  }, 30_000);

  it('a statement past the timeout is cancelled by the server: the write it was is not applied later, and the answer is 503', async () => {
    const { isUnavailable } = await import('../../src/service/plugins/errors.js');
    const schema = 'ep_stmt_' + Math.random().toString(36).slice(2, 10);
    const db = await openPostgres(process.env.DATABASE_URL!, { schema, queryTimeoutMs: 500 });
    try {
      await db.query('CREATE TABLE t (id int PRIMARY KEY, n int NOT NULL)');
      await db.query('INSERT INTO t VALUES (1, 0)');
      let release = () => {};
      let locked = () => {};
      const held = new Promise<void>((r) => (release = r));
      const isLocked = new Promise<void>((r) => (locked = r));
      const holder = db.tx(async (q) => {
        await q.query('SELECT n FROM t WHERE id = 1 FOR UPDATE');
        locked();
        await held;
      }, { unbounded: true });
      await isLocked;
      const err = await db.query('UPDATE t SET n = n + 1 WHERE id = 1').then(() => null, (e: Error & { code?: string }) => e);
      expect(err?.code).toBe('57014');
      expect(isUnavailable(err!)).toBe(true); // 503 ERR_UNAVAILABLE, Retry-After: 1
      release();
      await holder;
      expect((await db.query<{ n: number }>('SELECT n FROM t WHERE id = 1')).rows).toEqual([{ n: 0 }]);
    } finally {
      await db.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {});
      await db.close();
    }
  }, 30_000);
});
