import { caPemProblem, parseCaPem } from './ca-pem.js';
import { described, description, metadata } from './fields.js';
import type { KindDef } from './types.js';

export const certificateAuthority: KindDef = {
  name: 'certificateAuthority',
  title: 'certificate authority',
  manifestKind: 'CertificateAuthority',
  idPrefix: 'ca',
  path: '/certificate_authorities',
  listKey: 'certificate_authorities',
  operations: ['create', 'get', 'list', 'update', 'delete'],
  fields: {
    description, metadata,
    ca_pem: described({ type: 'string', minLength: 1, maxBytes: 65536 }, 'The CA certificate, PEM-encoded (one "-----BEGIN CERTIFICATE-----" block, basicConstraints CA:TRUE; at most 64 KiB). Cannot be changed: a new certificate is a new certificate authority.'),
  },
  required: ['ca_pem'],
  immutable: ['ca_pem'],
  // Which client certificates mutual TLS accepts.
  risk: { ca_pem: 'security' },
  reconcile: { normalize: { ca_pem: 'pem' } },
  collisionKeys: ['ca_pem'],
  derived: ['subject_common_name', 'not_before', 'not_after', 'key_usages', 'extended_key_usages'],
  derivedSchemas: {
    subject_common_name: { type: 'string' },
    not_before: { type: 'string', format: 'date-time' },
    not_after: { type: 'string', format: 'date-time' },
    key_usages: { type: 'array', items: { type: 'string' } },
    extended_key_usages: { type: 'array', items: { type: 'string' } },
  },
  responseOrder: [
    'description', 'metadata', 'ca_pem', 'subject_common_name', 'not_before', 'not_after',
    'key_usages', 'extended_key_usages',
  ],
  hooks: {
    check(body, ctx) {
      // ca_pem is immutable: it was checked when the CA was created.
      if (ctx.stored?.previous) return;
      const problem = caPemProblem(body.ca_pem as string);
      if (problem) ctx.report(['ca_pem'], problem, { code: 'ERR_INVALID_CA_PEM' });
    },
    prepare(ctx) {
      if (ctx.op === 'create') Object.assign(ctx.body, parseCaPem(ctx.body.ca_pem as string));
    },
  },
};
