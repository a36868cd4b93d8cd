import fp from 'fastify-plugin';
import { ApiError } from '../../contract/errors.js';
import { Authenticator, type Principal } from '../auth.js';

declare module 'fastify' {
  interface FastifyRequest { principal?: Principal }
}

/**
 * Every request of the scope it is registered in carries `Authorization: Bearer <api key>` of an
 * active key; `req.principal` is its account. Registered in the API scope only.
 */
export const authPlugin = fp<{ authCacheMs?: number }>(async (app, opts) => {
  const auth = new Authenticator(app.db, opts.authCacheMs);
  app.decorateRequest('principal', undefined);
  app.addHook('onRequest', async (req) => {
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw unauthorized(header ? 'Authorization header must be "Bearer <api key>"' : 'missing Authorization: Bearer <api key>');
    const principal = await auth.resolve(match[1]);
    if (!principal) throw unauthorized('unknown or revoked API key', 'invalid_token');
    req.principal = principal;
  });
}, { name: 'edgeplane-auth', dependencies: ['edgeplane-database', 'edgeplane-errors'] });

function unauthorized(msg: string, error?: string): ApiError {
  return new ApiError('ERR_UNAUTHORIZED', msg, {}, { 'www-authenticate': error ? `Bearer error="${error}"` : 'Bearer' });
}
