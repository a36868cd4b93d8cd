import { description, ids, metadata } from './fields.js';
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
  fields: { description, metadata, backends: { ...ids(BACKEND_PREFIXES, 'a backend', 100), uniqueItems: true } },
  required: ['backends'],
  responseOrder: ['description', 'metadata', 'backends'],
  refs: [{ field: 'backends', kind: 'failoverBackend', many: true, onlyPrefix: 'bkdfo', acyclic: true }],
  // Nothing in a failover backend is unique: `export --all` then `plan --adopt` matches it whole.
  adoptByContent: true,
};
