import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../contract/errors.js';
import { stackRefusalMessage } from '../../contract/stack-name.js';
import { Authenticator, neededScope, scopeCovers, type Principal, type Scope } from '../auth.js';
import type { AuthFailureLimit } from '../auth-failures.js';

declare module 'fastify' {
  interface FastifyRequest { principal?: Principal }
  /** `scope`: what the route needs of the key when its method says too little (docs/api.md, "Scopes"). */
  interface FastifyContextConfig {
    scope?: Scope;
    /**
     * `checked`: the route's writes check a stack-limited key themselves (objects by their
     * ownership marker, locks and runs by their stack). Any other write refuses such a key.
     */
    stacks?: 'checked';
  }
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
  const op = `${req.method} ${route.url.replace(/:(\w+)/g, '{$1}')}`;
  if (!scopeCovers(principal.scope, needs)) return new ApiError('ERR_FORBIDDEN_SCOPE', `this API key has scope ${principal.scope}; ${op} needs ${needs}`, { scope: principal.scope, needs });
  // A stack-limited key writes only what belongs to its stacks: a write that is no stack's is refused here.
  if (principal.stacks && needs !== 'read' && route.config.stacks !== 'checked') {
    return new ApiError('ERR_FORBIDDEN_SCOPE', stackRefusalMessage(principal.stacks, `${op} writes nothing of a stack`), { stacks: principal.stacks.join(','), needs: 'every stack' });
  }
  return undefined;
}

/**
 * Every request of the scope it is registered in carries `Authorization: Bearer <api key>` of an
 * active key; `req.principal` is its account. A key whose scope does not cover the route's is
 * refused with 403 ERR_FORBIDDEN_SCOPE (`scopeRefusal`). Registered in the API scope only. With
 * `failures`, an unknown or revoked key counts against the client's address, and an address past
 * its limit is refused (429) before its next look-up (`auth-failures.ts`).
 */
export const authPlugin = fp<{ authCacheMs?: number; failures?: AuthFailureLimit }>(async (app, opts) => {
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
    const failures = opts.failures;
    const refused = failures?.refusal(req.ip);
    if (refused) return done(refused);
    auth.resolve(match[1]).then((principal) => {
      if (!principal) {
        failures?.failed(req.ip);
        return done(unauthorized('unknown or revoked API key', 'invalid_token'));
      }
      req.principal = principal;
      done(scopeRefusal(req, principal));
    }, done);
  });
}, { name: 'edgeplane-auth', dependencies: ['edgeplane-database', 'edgeplane-errors'] });

function unauthorized(msg: string, error?: string): ApiError {
  return new ApiError('ERR_UNAUTHORIZED', msg, {}, { 'www-authenticate': error ? `Bearer error="${error}"` : 'Bearer' });
}
