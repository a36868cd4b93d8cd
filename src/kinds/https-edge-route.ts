import { described, description, metadata } from './fields.js';
import { ROUTE_MODULES } from './route-modules.js';
import type { KindDef } from './types.js';

/** The most routes one HTTPS edge holds (docs/api.md, Limits). */
export const MAX_ROUTES_PER_EDGE = 1000;
/** The most bytes of route configuration one HTTPS edge holds, all its routes together (docs/api.md, Limits). */
export const MAX_ROUTE_BYTES_PER_EDGE = 8 * 1024 * 1024;

export const httpsEdgeRoute: KindDef = {
  name: 'httpsEdgeRoute',
  title: 'HTTPS edge route',
  manifestKind: 'HTTPSEdgeRoute',
  idPrefix: 'edghtsrt',
  path: '/edges/https/:edge_id/routes',
  parent: { kind: 'httpsEdge', param: 'edge_id', field: 'edge_id' },
  perParent: { count: MAX_ROUTES_PER_EDGE, bytes: MAX_ROUTE_BYTES_PER_EDGE },
  operations: ['create', 'get', 'update', 'delete'],
  fields: {
    match_type: described({ type: 'string', enum: ['exact_path', 'path_prefix'] }, 'How `match` selects requests: `exact_path` (that path only) or `path_prefix` (every path that starts with it).'),
    match: {
      description: 'The path this route serves, starting with "/" (at most 2048 bytes); unique within its edge.',
      examples: ['/', '/api/'],
      type: 'string',
      pattern: '^/[\\x21-\\x7e\\u00a0-\\u{10ffff}]*$',
      maxBytes: 2048,
      'x-rule': 'must be a path starting with "/", without spaces or control characters',
    },
    description,
    metadata,
  },
  required: ['match_type', 'match'],
  // Which requests the route takes.
  risk: { match_type: 'traffic', match: 'traffic' },
  responseOrder: ['match_type', 'match', 'description', 'metadata'],
  // Per edge: two routes of one edge may not have the same match (whatever their match_type).
  uniques: [{
    scope: 'route_match',
    what: 'match',
    perParent: true,
    values: (body) => [body.match as string],
    code: 'ERR_ROUTE_MATCH_IN_USE',
    conflict: (v) => `match: the edge already has a route matching ${JSON.stringify(v)}; a match is unique within its edge`,
  }],
  modules: ROUTE_MODULES,
};
