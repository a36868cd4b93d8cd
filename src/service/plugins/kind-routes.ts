import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { registerKindRoutes } from '../routes/kind-routes.js';
import { Resources, type Caller } from '../writes/resources.js';
import { registerStackLocks } from '../routes/stack-locks.js';
import { registerSecretFingerprints } from '../routes/secret-fingerprints.js';
import { registerSyncRecord, type SyncRecordOptions } from '../routes/sync-runs.js';
import type { IdempotencyOptions } from '../writes/idempotency.js';

/** Every operation of every kind (`src/kinds/`) the stack locks and the sync record, in the API scope: after the version and key checks. */
export const kindRoutesPlugin = fp<{ vendorPrefix: string; idempotency?: IdempotencyOptions; syncRecord?: SyncRecordOptions }>(async (api, opts) => {
  const resources = new Resources(api.db, { vendorPrefix: opts.vendorPrefix }, api.secrets);
  const callerOf = (req: FastifyRequest): Caller => {
    const p = req.principal!;
    return p.stacks ? { accountId: p.accountId, baseUrl: req.baseUrl!, stacks: p.stacks } : { accountId: p.accountId, baseUrl: req.baseUrl! };
  };
  registerKindRoutes(api, resources, callerOf, api.db, opts.idempotency);
  // Our extension beside the kinds: the stack locks the reconciler takes (docs/api.md).
  registerStackLocks(api, api.db, callerOf, opts.idempotency);
  // And the record of syncs: runs, and each stack's summary (docs/api.md, "Sync record").
  registerSyncRecord(api, api.db, callerOf, opts.idempotency, opts.syncRecord);
  // And secret fingerprints under the service's key (docs/edges.md, "Secret fingerprints").
  registerSecretFingerprints(api, callerOf);
}, { name: 'edgeplane-kind-routes', dependencies: ['edgeplane-database', 'edgeplane-version-header', 'edgeplane-auth'] });
