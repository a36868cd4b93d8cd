import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { registerKindRoutes } from '../kind-routes.js';
import { Resources, type Caller } from '../resources.js';

/** Every operation of every kind (`src/kinds/`), in the API scope: after the version and key checks. */
export const kindRoutesPlugin = fp<{ vendorPrefix: string }>(async (api, opts) => {
  const resources = new Resources(api.db, { vendorPrefix: opts.vendorPrefix });
  const callerOf = (req: FastifyRequest): Caller => ({ accountId: req.principal!.accountId, baseUrl: req.baseUrl! });
  registerKindRoutes(api, resources, callerOf);
}, { name: 'edgeplane-kind-routes', dependencies: ['edgeplane-database', 'edgeplane-version-header', 'edgeplane-auth'] });
