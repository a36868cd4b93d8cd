import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../contract/errors.js';
import { Authenticator, neededScope, scopeCovers, type Principal, type Scope } from '../auth.js';

declare module 'fastify' {
  interface FastifyRequest { principal?: Principal }
  /** `scope`: what the route needs of the key when its method says too little (docs/api.md, "Scopes"). */
  interface FastifyContextConfig { scope?: Scope }
}

/**
 * The one place scopes are enforced: the scope a request needs is `neededScope` of its route (its
 * `config.scope`, else `read` for GET/HEAD/OPTIONS and `write` for the others). A path no route has needs nothing
 * (it answers 404). Runs in onRequest: a refused request reaches no body parsing and no handler.
 */
function scopeRefusal(req: FastifyRequest, principal: Principal): ApiError | undefined {
  const route = req.routeOptions;
  if (route.url === undefined) return undefined;
  const needs: Scope = neededScope(req.method, route.config);
  if (scopeCovers(principal.scope, needs)) return undefined;
  return new ApiError('ERR_FORBIDDEN_SCOPE', `this API key has scope ${principal.scope}; ${req.method} ${route.url.replace(/:(\w+)/g, '{$1}')} needs ${needs}`, { scope: principal.scope, needs });
}

/**
 * Every request of the scope it is registered in carries `Authorization: Bearer <api key>` of an
 * active key; `req.principal` is its account. A key whose scope does not cover the route's is
 * refused with 403 ERR_FORBIDDEN_SCOPE (`scopeRefusal`). Registered in the API scope only.
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
      return done(scopeRefusal(req, hit));
    }
    auth.resolve(match[1]).then((principal) => {
      if (!principal) return done(unauthorized('unknown or revoked API key', 'invalid_token'));
      req.principal = principal;
      done(scopeRefusal(req, principal));
    }, done);
  });
}, { name: 'edgeplane-auth', dependencies: ['edgeplane-database', 'edgeplane-errors'] });

function unauthorized(msg: string, error?: string): ApiError {
  return new ApiError('ERR_UNAUTHORIZED', msg, {}, { 'www-authenticate': error ? `Bearer error="${error}"` : 'Bearer' });
}
