import { described, enabled, forbidden, ids, object } from './fields.js';
import type { ModuleDef } from './types.js';

export const TLS_VERSIONS = ['1.0', '1.1', '1.2', '1.3'];

/** Edge modules: one row each. The generic mechanism (src/service/writes/resources.ts) does the rest. */
export const EDGE_MODULES: ModuleDef[] = [
  {
    name: 'mutual_tls',
    request: described(object({
      enabled,
      certificate_authority_ids: described({ ...ids(['ca'], 'a certificate authority', 10), uniqueItems: true }, 'The certificate authorities client certificates must be signed by: names of CertificateAuthorities of the manifests, or ids (ca_…); at most 10. Default: none.'),
    }), 'Mutual TLS: clients must present a certificate signed by one of these certificate authorities.'),
    refs: [{ field: 'certificate_authority_ids', kind: 'certificateAuthority', many: true, outField: 'certificate_authorities' }],
    defaults: { enabled: true, certificate_authority_ids: [] },
    reconcile: { sets: ['certificate_authority_ids'] },
    risk: 'security',
    responseOrder: ['enabled', 'certificate_authority_ids'],
  },
  {
    name: 'tls_termination',
    request: described(object({
      enabled,
      // null is what clients send for "the service's default".
      min_version: described({ type: ['string', 'null'], enum: [...TLS_VERSIONS, null] }, 'The lowest TLS version the edge accepts and advertises: "1.0", "1.1", "1.2" or "1.3" (quoted: unquoted, YAML reads a number). Default (also null): "1.2".'),
      terminate_at: described(forbidden('cannot be set on an HTTPS edge; it always terminates TLS at the edge ("edge")'), 'Where TLS ends: always "edge" on an HTTPS edge, set by the service (cannot be given).'),
    }), 'TLS termination at the edge: the minimum TLS version.'),
    defaults: { enabled: true, min_version: '1.2' },
    derived: ['terminate_at'],
    risk: 'security',
    derivedSchemas: { terminate_at: { type: 'string', enum: ['edge'] } },
    prepare(m) {
      m.min_version ??= '1.2';
      m.terminate_at = 'edge';
    },
    responseOrder: ['enabled', 'terminate_at', 'min_version'],
  },
];
