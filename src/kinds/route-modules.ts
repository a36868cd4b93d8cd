import { BACKEND_PREFIXES } from './failover-backend.js';
import { described, enabled, ids, object, positiveUint32, uint32 } from './fields.js';
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
    request: described(object({
      enabled,
      backend_id: described(ids(BACKEND_PREFIXES, 'a backend').items as Record<string, unknown>, 'The backend that serves this route: the name of a FailoverBackend of the manifests, or a backend id.', ['app']),
    }, ['backend_id']), 'Where the route sends its traffic.'),
    // Only failover backends are stored here; other backend kinds are kept as given.
    refs: [{ field: 'backend_id', kind: 'failoverBackend', onlyPrefix: 'bkdfo', outField: 'backend' }],
    defaults: { enabled: true },
    // Fail closed: a backend sends traffic, so it goes on after and comes off before the guards.
    role: 'traffic',
    risk: 'traffic',
    responseOrder: ['enabled', 'backend_id'],
  },
  {
    name: 'ip_restriction',
    request: described(object({
      enabled,
      ip_policy_ids: described({ ...ids(['ipp'], 'an IP policy', 100), uniqueItems: true }, 'The IP policies applied to requests, by id (ipp_…; at most 100). Default: none.'),
    }), 'IP restriction: only addresses the IP policies allow reach the route.'),
    // IP policies are not part of this service: ids are checked for format only.
    refs: [{ field: 'ip_policy_ids', kind: 'ipPolicy', many: true, stored: false, outField: 'ip_policies' }],
    defaults: { enabled: true, ip_policy_ids: [] },
    role: 'guard',
    risk: 'security',
    reconcile: { sets: ['ip_policy_ids'] },
    responseOrder: ['enabled', 'ip_policy_ids'],
  },
  {
    name: 'circuit_breaker',
    request: described(object({
      enabled,
      tripped_duration: described(positiveUint32, 'Seconds to wait after the circuit trips before the upstream\'s health is looked at again. Default: 10.'),
      rolling_window: described(positiveUint32, 'Seconds of the rolling window in which request outcomes are counted. Default: 10.'),
      num_buckets: described({ type: 'integer', minimum: 1, maximum: 128 }, 'Number of buckets the rolling window is divided into (1-128). Default: 10.'),
      volume_threshold: described(uint32, 'Requests within the rolling window before the circuit may trip. Default: 20.'),
      error_threshold_percentage: described({ type: 'number', minimum: 0, maximum: 1 }, 'Share of failed requests that trips the circuit, between 0 and 1 (0.5 is half; not a percentage of 100). Default: 0.5.', [0.25]),
    }), 'Circuit breaker: stops sending requests to a failing upstream for a while.'),
    defaults: { enabled: true, tripped_duration: 10, rolling_window: 10, num_buckets: 10, volume_threshold: 20, error_threshold_percentage: 0.5 },
    responseOrder: ['enabled', 'tripped_duration', 'rolling_window', 'num_buckets', 'volume_threshold', 'error_threshold_percentage'],
  },
  { name: 'compression', request: described(object({ enabled }), 'Compresses responses for clients that accept it.'), defaults: { enabled: true }, responseOrder: ['enabled'] },
  headersModule('request_headers'),
  headersModule('response_headers'),
  webhookVerification,
  oauth,
  saml,
  oidc,
  { name: 'websocket_tcp_converter', request: described(object({ enabled }), 'Converts WebSocket connections from clients into plain TCP streams to the upstream.'), defaults: { enabled: true }, responseOrder: ['enabled'] },
];
