import { described, description, ids, metadata } from './fields.js';
import type { KindDef } from './types.js';

/** Prefixes of backend kinds a failover backend may list; only `bkdfo_` ones are stored here. */
export const BACKEND_PREFIXES = ['bkdfo', 'bkdhr', 'bkdtg', 'bkdwd', 'bkdsc'];

export const failoverBackend: KindDef = {
  name: 'failoverBackend',
  title: 'failover backend',
  manifestKind: 'FailoverBackend',
  idPrefix: 'bkdfo',
  path: '/backends/failover',
  listKey: 'backends',
  operations: ['create', 'get', 'list', 'update', 'delete'],
  fields: {
    description, metadata,
    backends: described({ ...ids(BACKEND_PREFIXES, 'a backend', 100), uniqueItems: true }, 'The backends to send traffic to, in order of preference: the first healthy one serves. Backend ids, or names of FailoverBackends of the manifests (no cycles); at most 100, no repeats.', [['bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs', 'standby']]),
  },
  required: ['backends'],
  risk: { backends: 'traffic' },
  responseOrder: ['description', 'metadata', 'backends'],
  refs: [{ field: 'backends', kind: 'failoverBackend', many: true, onlyPrefix: 'bkdfo', acyclic: true }],
  // Nothing in a failover backend is unique: `export --all` then `plan --adopt` matches it whole.
  adoptByContent: true,
};
