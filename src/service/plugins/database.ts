import fp from 'fastify-plugin';
import type { Db } from '../../store/db.js';
import type { ServiceSecrets } from '../writes/secrets.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The service's database; owned by whoever built the app (it outlives `close`). */
    db: Db;
    /** The sealer of secrets (none without a key ring) and the fingerprint key (`service/writes/secrets.ts`). */
    secrets: ServiceSecrets;
  }
}

/** Makes the database and the service's secrets known to every plugin as `app.db`, `app.secrets`. */
export const databasePlugin = fp<{ db: Db; secrets: ServiceSecrets }>(async (app, opts) => {
  app.decorate('db', opts.db);
  app.decorate('secrets', opts.secrets);
}, { name: 'edgeplane-database' });
