import { enabled, forbidden, ids, object } from './fields.js';
import type { ModuleDef } from './types.js';

export const TLS_VERSIONS = ['1.0', '1.1', '1.2', '1.3'];

/** Edge modules: one row each. The generic mechanism (src/service/resources.ts) does the rest. */
export const EDGE_MODULES: ModuleDef[] = [
  {
    name: 'mutual_tls',
    request: object({ enabled, certificate_authority_ids: { ...ids(['ca'], 'a certificate authority', 10), uniqueItems: true } }),
    refs: [{ field: 'certificate_authority_ids', kind: 'certificateAuthority', many: true, outField: 'certificate_authorities' }],
    defaults: { enabled: true, certificate_authority_ids: [] },
    reconcile: { sets: ['certificate_authority_ids'] },
    responseOrder: ['enabled', 'certificate_authority_ids'],
  },
  {
    name: 'tls_termination',
    request: object({
      enabled,
      // null is what clients send for "the service's default".
      min_version: { type: ['string', 'null'], enum: [...TLS_VERSIONS, null] },
      terminate_at: forbidden('cannot be set on an HTTPS edge; it always terminates TLS at the edge ("edge")'),
    }),
    defaults: { enabled: true, min_version: '1.2' },
    derived: ['terminate_at'],
    prepare(m) {
      m.min_version ??= '1.2';
      m.terminate_at = 'edge';
    },
    responseOrder: ['enabled', 'terminate_at', 'min_version'],
  },
];
