import Fastify, { type FastifyInstance } from 'fastify';
import type { Db } from '../src/store/db.js';

/** The table the select baseline reads: the shape of `objects`, without its foreign keys. */
const TABLE = 'bench_baseline_objects';

/**
 * The two yardsticks on the same engine and machine: a bare fastify route answering a constant
 * (the HTTP floor), and a bare fastify route doing one primary-key select of an `objects`-shaped
 * row and returning it (the floor for a GET by id: no auth, no validation, no response shaping),
 * as `pg` runs a query by default (parsed and planned on every call) and prepared.
 * `rowId` is copied from `objects` so both return the same stored row.
 */
export async function startBaselines(db: Db, rowId: string): Promise<{ url: string; constantPath: string; selectPath: string; preparedPath: string; close(): Promise<void> }> {
  await db.query(`CREATE TABLE ${TABLE} (LIKE objects INCLUDING DEFAULTS INCLUDING INDEXES)`);
  await db.query(`INSERT INTO ${TABLE} SELECT id, account_id, kind, parent_id, created_at, body FROM objects WHERE id = $1`, [rowId]);

  const app: FastifyInstance = Fastify({ logger: false });
  app.get('/constant', async () => ({ ok: true }));
  app.get<{ Params: { id: string } }>('/select/:id', async (req, reply) => {
    const { rows } = await db.query(`SELECT id, account_id, kind, parent_id, created_at, body FROM ${TABLE} WHERE id = $1`, [req.params.id]);
    if (!rows[0]) return reply.code(404).send({ error: 'not found' });
    return rows[0];
  });
  // The same select as a prepared statement, as the service runs its reads by id: how far the
  // service is from the floor when both skip PostgreSQL's parse and plan per request.
  app.get<{ Params: { id: string } }>('/select-prepared/:id', async (req, reply) => {
    const { rows } = await db.query(`SELECT id, account_id, kind, parent_id, created_at, body FROM ${TABLE} WHERE id = $1`, [req.params.id], { prepared: true });
    if (!rows[0]) return reply.code(404).send({ error: 'not found' });
    return rows[0];
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url: urlOf(app),
    constantPath: '/constant',
    selectPath: `/select/${rowId}`,
    preparedPath: `/select-prepared/${rowId}`,
    async close() {
      await app.close();
      await db.query(`DROP TABLE ${TABLE}`);
    },
  };
}

export function urlOf(app: FastifyInstance): string {
  const addr = app.server.address();
  if (!addr || typeof addr !== 'object') throw new Error('server is not listening on a TCP port');
  return `http://127.0.0.1:${addr.port}`;
}
