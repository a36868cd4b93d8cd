import { EDGE_MODULES } from './edge-modules.js';
import { described, description, metadata } from './fields.js';
import { checkHostports, normalizeHostports } from './hostport.js';
import type { KindDef } from './types.js';

export const httpsEdge: KindDef = {
  name: 'httpsEdge',
  title: 'HTTPS edge',
  manifestKind: 'HTTPSEdge',
  idPrefix: 'edghts',
  path: '/edges/https',
  listKey: 'https_edges',
  operations: ['create', 'get', 'list', 'update', 'delete'],
  fields: {
    description,
    metadata,
    hostports: described({ type: 'array', maxItems: 100, items: { type: 'string', minLength: 1, maxLength: 260 } }, 'The host:port pairs this edge serves (at most 100). A hostport belongs to one edge of the whole service. Default: none.', [['www.example.com:443']]),
  },
  responseOrder: ['description', 'metadata', 'hostports'],
  // Service-wide: one hostport is served by at most one edge. Other code (abuse reports) reads
  // unique_keys where scope = 'hostport', value = the lower-case `host:port`.
  uniques: [{
    scope: 'hostport',
    what: 'hostport',
    values: (body) => (body.hostports as string[] | undefined) ?? [],
    code: 'ERR_HOSTPORT_IN_USE',
    conflict: (v) => `hostports: ${v} is already served by another HTTPS edge; a hostport belongs to one edge`,
    // A hostname is one account's: `*.example.com:443` may not be added while another account
    // serves `a.example.com:443`, nor the other way round.
    wildcardOverlaps: {
      conflict: (v) => `hostports: ${v} overlaps a hostport another account serves (${v.startsWith('*.') ? 'this wildcard covers it, or a wildcard of theirs covers this one' : 'a wildcard of theirs covers it'}); a hostname is served by one account`,
    },
  }],
  modules: EDGE_MODULES,
  defaults: { hostports: [] },
  // A hostport added or removed changes what the internet reaches.
  risk: { hostports: 'traffic' },
  reconcile: { normalize: { hostports: 'lowercase-items' }, sets: ['hostports'] },
  embeds: { routes: 'httpsEdgeRoute' },
  hooks: {
    check(body, ctx) {
      checkHostports((body.hostports as string[] | undefined) ?? [], ctx);
    },
    prepare(ctx) {
      ctx.body.hostports = normalizeHostports((ctx.body.hostports as string[] | undefined) ?? []);
    },
  },
  // Hostnames banned after an abuse report cannot be added (docs/abuse-reports.md).
  effects: [{ type: 'hostportsNotBanned', field: 'hostports' }],
};
