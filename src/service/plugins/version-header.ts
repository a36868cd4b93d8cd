import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../contract/errors.js';
import { syncHook } from './sync-hook.js';

export const SUPPORTED_VERSION = '2';

/**
 * Every request of the scope it is registered in must name the API version in one of the
 * deployment's version headers (`vendor.ts`). Registered in the API scope only: ops routes
 * (probes, metrics, the OpenAPI document) are read by tools that send none.
 */
export const versionHeaderPlugin = fp<{ versionHeaders: string[] }>(async (app, opts) => {
  const names = opts.versionHeaders;
  app.addHook('onRequest', syncHook((req) => checkVersion(req, names)));
}, { name: 'edgeplane-version-header' });

function checkVersion(req: FastifyRequest, names: string[]) {
  const name = names.find((n) => req.headers[n.toLowerCase()] !== undefined);
  if (!name) throw new ApiError('ERR_VERSION_MISSING', `missing version header: send ${names[0]}: ${SUPPORTED_VERSION}`);
  const value = String(req.headers[name.toLowerCase()]).trim();
  if (value !== SUPPORTED_VERSION) {
    throw new ApiError('ERR_VERSION_UNSUPPORTED', `${name}: ${JSON.stringify(value)} is not supported; this service serves version ${SUPPORTED_VERSION}`);
  }
}
