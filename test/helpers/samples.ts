import type { TestClient } from './service.js';
import { certs } from './certs.js';

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
];
