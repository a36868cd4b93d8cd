import { abuseReport } from './abuse-report.js';
import { applicationUser } from './application-user.js';
import { certificateAuthority } from './certificate-authority.js';
import { failoverBackend } from './failover-backend.js';
import { httpsEdge } from './https-edge.js';
import { httpsEdgeRoute } from './https-edge-route.js';
import type { KindDef } from './types.js';

/** Every kind the service knows. Adding a kind: its file, one line here. */
export const KINDS: KindDef[] = [failoverBackend, certificateAuthority, httpsEdge, httpsEdgeRoute, abuseReport, applicationUser];

/** Kinds that are referenced but not stored by this service (their Refs still get a uri). */
export const FOREIGN_PATHS: Record<string, string> = { ipPolicy: '/ip_policies' };

/** Paths of backend kinds by id prefix: a route's backend may name one this service does not store. */
export const FOREIGN_PREFIX_PATHS: Record<string, string> = {
  bkdhr: '/backends/http_response',
  bkdtg: '/backends/tunnel_group',
  bkdwd: '/backends/weighted',
  bkdsc: '/backends/static_address',
  ipp: '/ip_policies',
};

const byName = new Map(KINDS.map((k) => [k.name, k]));

export function kindByName(name: string): KindDef {
  const k = byName.get(name);
  if (!k) throw new Error(`unknown kind ${name}`);
  return k;
}

export function findKind(name: string): KindDef | undefined {
  return byName.get(name);
}

/** Kinds some field of a kind or module refers to by id (a CA, a failover backend): the only ids a reference can read as an identity. */
const REF_TARGETS: ReadonlySet<string> = new Set(KINDS.flatMap((k) => [...(k.refs ?? []), ...(k.modules ?? []).flatMap((m) => m.refs ?? [])]).map((r) => r.kind));

export function isRefTarget(kind: KindDef): boolean {
  return REF_TARGETS.has(kind.name);
}
