import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../contract/errors.js';
import type { RateLimitOptions } from '../rate-limit.js';
import type { IdempotencyOptions } from '../writes/idempotency.js';
import type { SyncRecordOptions } from '../routes/sync-runs.js';
import type { DegradedChecks } from '../health.js';
import type { AuthFailureLimit } from '../auth-failures.js';
import { authPlugin } from './authenticate.js';
import { kindRoutesPlugin } from './kind-routes.js';
import { syncHook } from './sync-hook.js';
import { versionHeaderPlugin } from './version-header.js';
import { headerSafeUrl } from '../../util/shown-url.js';

declare module 'fastify' {
  interface FastifyRequest { baseUrl?: string }
}

export interface ApiScopeOptions {
  /** Version headers accepted (the first is canonical). */
  versionHeaders: string[];
  vendorPrefix: string;
  /** Base of every `uri`; default: scheme and Host of the request. */
  publicUrl?: string;
  authCacheMs?: number;
  authFailures?: AuthFailureLimit;
  /** Requests per minute per API key (`rate-limit.ts`); none without it (tests, the embedded CLI). */
  rateLimit?: RateLimitOptions & { health?: DegradedChecks };
  idempotency?: IdempotencyOptions;
  syncRecord?: SyncRecordOptions;
}

/**
 * The public API: an encapsulated scope whose every request, unknown paths included, is checked
 * for a usable Host, the version header and an API key, in that order. Ops routes live outside it.
 */
export const apiPlugin = fp<ApiScopeOptions>(async (api, opts) => {
  // It goes into headers (`Location`, `Link`) too: in an ASCII form.
  const publicUrl = opts.publicUrl === undefined ? undefined : headerSafeUrl(opts.publicUrl).replace(/\/+$/, '');
  api.decorateRequest('baseUrl', undefined);
  // A Host no uri can be built on is refused before anything is done.
  api.addHook('onRequest', syncHook((req) => {
    req.baseUrl = publicUrl ?? requestBase(req);
  }));
  await api.register(versionHeaderPlugin, { versionHeaders: opts.versionHeaders });
  await api.register(authPlugin, { authCacheMs: opts.authCacheMs, failures: opts.authFailures });
  // Needs the caller (it counts per key), before the routes (its hooks attach to those after it).
  // Loaded only when configured: the embedded CLI has none, and need not load ioredis.
  if (opts.rateLimit) await api.register((await import('../rate-limit.js')).default, opts.rateLimit);
  await api.register(kindRoutesPlugin, { vendorPrefix: opts.vendorPrefix, idempotency: opts.idempotency, syncRecord: opts.syncRecord });
  // Set here, not at the root: a path no route has goes through this scope's checks (a caller
  // without a key learns nothing about which paths exist beyond the OpenAPI document).
  api.setNotFoundHandler(async (req) => {
    throw new ApiError('ERR_NOT_FOUND', `no such path: ${req.method} ${req.url.split('?')[0]}`);
  });
}, { name: 'edgeplane-api', encapsulate: true, dependencies: ['edgeplane-database', 'edgeplane-errors', 'edgeplane-json-body'] });

/** `host`, `host:port`, `[v6]`, `[v6]:port`: what may stand between `http://` and the path of a `uri`. */
const AUTHORITY = /^(?:[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?$/;

/**
 * The scheme and authority `uri`s are built on when no public URL is configured: the request's
 * `Host`. One that is not a host[:port] (`a b`, `evil.com/x?y=`) would make every `uri` and stored
 * SAML URL of the response point elsewhere or not parse: refused. HTTP/1.0 may send none: the
 * address the request came in on is used.
 */
function requestBase(req: FastifyRequest): string {
  const host = req.headers.host;
  if ((host === undefined || host === '') && req.raw.httpVersion !== '1.0') {
    throw new ApiError('ERR_BAD_REQUEST', 'the request has no Host header: HTTP/1.1 requires one (RFC 9112, 3.2)');
  }
  if (host === undefined || host === '') {
    const local = (req.socket.localAddress ?? '127.0.0.1').replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1');
    return `${req.protocol}://${local.includes(':') ? `[${local}]` : local}:${req.socket.localPort}`;
  }
  const m = AUTHORITY.exec(host);
  if (!m || (m[1] !== undefined && Number(m[1]) > 65535)) {
    throw new ApiError('ERR_BAD_REQUEST', `Host header ${JSON.stringify(host.slice(0, 100))} is not a host[:port]: the service builds each uri from it (or set EDGEPLANE_PUBLIC_URL)`);
  }
  // Node keeps the first of two Host headers; RFC 9112 (3.2) has such a request refused.
  let hosts = 0;
  for (let i = 0; i < req.raw.rawHeaders.length; i += 2) if (req.raw.rawHeaders[i].length === 4 && req.raw.rawHeaders[i].toLowerCase() === 'host') hosts++;
  if (hosts > 1) throw new ApiError('ERR_BAD_REQUEST', 'the request has more than one Host header');
  return `${req.protocol}://${host}`;
}
