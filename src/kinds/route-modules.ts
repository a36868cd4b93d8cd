import { BACKEND_PREFIXES } from './failover-backend.js';
import { enabled, ids, object, positiveUint32, uint32 } from './fields.js';
import { headersModule } from './headers-module.js';
import { oauth } from './oauth.js';
import { oidc } from './oidc.js';
import { saml } from './saml.js';
import type { ModuleDef } from './types.js';
import { webhookVerification } from './webhook-verification.js';

/**
 * Route modules, one row each, in the order routes return them. Request schema, references,
 * defaults, derived and write-only fields and the normaliser are all here; the service's generic
 * module mechanism serves PUT / GET / DELETE and inline create / update for every one.
 */
export const ROUTE_MODULES: ModuleDef[] = [
  {
    name: 'backend',
    request: object({ enabled, backend_id: ids(BACKEND_PREFIXES, 'a backend').items as Record<string, unknown> }, ['backend_id']),
    // Only failover backends are stored here; other backend kinds are kept as given.
    refs: [{ field: 'backend_id', kind: 'failoverBackend', onlyPrefix: 'bkdfo', outField: 'backend' }],
    defaults: { enabled: true },
    // Fail closed: a backend sends traffic, so it goes on after and comes off before the guards.
    role: 'traffic',
    responseOrder: ['enabled', 'backend_id'],
  },
  {
    name: 'ip_restriction',
    request: object({ enabled, ip_policy_ids: { ...ids(['ipp'], 'an IP policy', 100), uniqueItems: true } }),
    // IP policies are not part of this service: ids are checked for format only.
    refs: [{ field: 'ip_policy_ids', kind: 'ipPolicy', many: true, stored: false, outField: 'ip_policies' }],
    defaults: { enabled: true, ip_policy_ids: [] },
    role: 'guard',
    reconcile: { sets: ['ip_policy_ids'] },
    responseOrder: ['enabled', 'ip_policy_ids'],
  },
  {
    name: 'circuit_breaker',
    request: object({
      enabled,
      tripped_duration: positiveUint32,
      rolling_window: positiveUint32,
      num_buckets: { type: 'integer', minimum: 1, maximum: 128 },
      volume_threshold: uint32,
      error_threshold_percentage: { type: 'number', minimum: 0, maximum: 1 },
    }),
    defaults: { enabled: true, tripped_duration: 10, rolling_window: 10, num_buckets: 10, volume_threshold: 20, error_threshold_percentage: 0.5 },
    responseOrder: ['enabled', 'tripped_duration', 'rolling_window', 'num_buckets', 'volume_threshold', 'error_threshold_percentage'],
  },
  { name: 'compression', request: object({ enabled }), defaults: { enabled: true }, responseOrder: ['enabled'] },
  headersModule('request_headers'),
  headersModule('response_headers'),
  webhookVerification,
  oauth,
  saml,
  oidc,
  { name: 'websocket_tcp_converter', request: object({ enabled }), defaults: { enabled: true }, responseOrder: ['enabled'] },
];
