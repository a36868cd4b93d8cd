import fp from 'fastify-plugin';
import type { Db } from '../../store/db.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The service's database; owned by whoever built the app (it outlives `close`). */
    db: Db;
  }
}

/** Makes the database known to every plugin as `app.db`. */
export const databasePlugin = fp<{ db: Db }>(async (app, opts) => {
  app.decorate('db', opts.db);
}, { name: 'edgeplane-database' });
