import type { SecretSource } from '../manifests/secrets.js';

/** A reference to a managed object by manifest identity (`CertificateAuthority/root`). */
export interface RefToken { $ref: string }
/**
 * A secret as the planner sees it: where it comes from and its salted fingerprint (null: not
 * known, e.g. an object never stamped by us). Plans carry this, never the value.
 */
export interface SecretToken { $secret: SecretSource | 'stored'; fingerprint: string | null }

export function isRefToken(v: unknown): v is RefToken {
  return !!v && typeof v === 'object' && typeof (v as RefToken).$ref === 'string' && Object.keys(v as object).length === 1;
}

/** Calls `fn` with the identity of every reference token in a value, depth first, in key order. */
export function forEachRef(v: unknown, fn: (identity: string) => void): void {
  if (isRefToken(v)) fn(v.$ref);
  else if (Array.isArray(v)) for (const x of v) forEachRef(x, fn);
  else if (v && typeof v === 'object') for (const k in v) forEachRef((v as Record<string, unknown>)[k], fn);
}

export function isSecretToken(v: unknown): v is SecretToken {
  return !!v && typeof v === 'object' && '$secret' in (v as object) && 'fingerprint' in (v as object);
}

/** Where apply substitutes the id of an object created earlier in the same plan. */
export function placeholder(identity: string): string {
  return `{${identity}.id}`;
}
