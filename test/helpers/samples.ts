import type { TestClient } from './service.js';
import { certs } from './certs.js';
import { hostport } from './edges.js';

/**
 * A valid create body and a valid update body per kind, for the table-driven generic contract.
 * A kind that needs other objects first creates them through the client.
 */
export interface KindSample {
  kind: string;
  /** Collection path (parent ids filled in by `setup`). */
  path: (ctx: Record<string, string>) => string;
  listKey: string | null;
  setup?: (c: TestClient) => Promise<Record<string, string>>;
  create: (ctx: Record<string, string>, n: number) => unknown;
  update: (ctx: Record<string, string>) => Record<string, unknown>;
}

export const SAMPLES: KindSample[] = [
  {
    kind: 'failoverBackend',
    path: () => '/backends/failover',
    listKey: 'backends',
    create: (_ctx, n) => ({ description: `fo ${n}`, backends: [`bkdhr_${String(n).padStart(27, '0')}`] }),
    update: () => ({ description: 'changed', backends: ['bkdtg_' + 'z'.repeat(27)] }),
  },
  {
    kind: 'certificateAuthority',
    path: () => '/certificate_authorities',
    listKey: 'certificate_authorities',
    create: (_ctx, n) => ({ description: `ca ${n}`, ca_pem: n % 2 ? certs.ecCa : certs.rsaCa }),
    update: () => ({ description: 'changed', metadata: '{"team":"edge"}' }),
  },
  {
    kind: 'httpsEdge',
    path: () => '/edges/https',
    listKey: 'https_edges',
    create: (_ctx, n) => ({ description: `edge ${n}`, hostports: [hostport()], tls_termination: { min_version: '1.3' } }),
    update: () => ({ description: 'changed', hostports: [hostport(), hostport()] }),
  },
  {
    kind: 'httpsEdgeRoute',
    path: (ctx) => `/edges/https/${ctx.edge}/routes`,
    listKey: null,
    setup: async (c) => ({ edge: (await c.post('/edges/https', { hostports: [hostport()] })).body.id }),
    create: (_ctx, n) => ({ description: `route ${n}`, match_type: 'path_prefix', match: `/r${n}`, compression: {} }),
    update: () => ({ description: 'changed', match_type: 'exact_path', match: '/changed' }),
  },
];
