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
  // Callback style, not async: a key seen in the last seconds is answered from the cache without
  // a promise or a turn of the microtask queue (it runs on every request).
  app.addHook('onRequest', (req, _reply, done) => {
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) return done(unauthorized(header ? 'Authorization header must be "Bearer <api key>"' : 'missing Authorization: Bearer <api key>'));
    const hit = auth.cached(match[1]);
    if (hit) {
      req.principal = hit;
      return done();
    }
    auth.resolve(match[1]).then((principal) => {
      if (!principal) return done(unauthorized('unknown or revoked API key', 'invalid_token'));
      req.principal = principal;
      done();
    }, done);
  });
}, { name: 'edgeplane-auth', dependencies: ['edgeplane-database', 'edgeplane-errors'] });

function unauthorized(msg: string, error?: string): ApiError {
  return new ApiError('ERR_UNAUTHORIZED', msg, {}, { 'www-authenticate': error ? `Bearer error="${error}"` : 'Bearer' });
}
