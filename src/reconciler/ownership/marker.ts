import { createHmac } from 'node:crypto';
import { canonicalJson } from '../../util/canonical-json.js';
import { utf8Bytes } from '../../util/bytes.js';
import { NAME_PATTERN } from '../manifests/schema.js';
import { STACK_NAME } from '../../contract/stack-name.js';

export const TOOL = 'edgeplane';
export const MARKER_VERSION = 1;
/** The API's limit on `metadata`, in UTF-8 bytes. */
export const METADATA_LIMIT = 4096;

/**
 * What the reconciler writes into the `metadata` of every object it manages. Identity lives on the
 * objects, so any runner can plan with no state file, and an interrupted apply is recovered by
 * finding the object through its marker.
 */
export interface Marker {
  tool: typeof TOOL;
  v: number;
  stack: string;
  /** Manifest identity: `CertificateAuthority/root`, `HTTPSEdge/web/routes/api`. */
  id: string;
  /** Fingerprints of secret fields, by field path (`oidc.client_secret`): the service's (`k:…`, docs/edges.md). */
  fp?: Record<string, string>;
  /** Never deleted by prune, even once gone from the manifests. */
  protect?: boolean;
}

/** Stored metadata: `{"managed_by": <marker>, "metadata": <the user's own string>}` as canonical JSON. */
export function encodeMetadata(marker: Marker, user: string | undefined): string {
  const m: Marker = { ...marker };
  if (!m.fp || Object.keys(m.fp).length === 0) delete m.fp;
  if (!m.protect) delete m.protect;
  return canonicalJson({ managed_by: m, ...(user !== undefined && user !== '' ? { metadata: user } : {}) });
}

export { STACK_NAME } from '../../contract/stack-name.js';

/**
 * Manifest identities as the reconciler writes them (`HTTPSEdge/web/routes/api`): a marker whose
 * `id` is anything else was not written by it. Its text would reach plans, terminals and
 * pull-request comments (a line break and Markdown in it forged a "No changes." there): such
 * metadata is the user's, and the object unmanaged.
 */
const IDENTITY = new RegExp(`^[A-Z][A-Za-z]{0,63}/${NAME_PATTERN}(?:/[a-z_]{1,64}/${NAME_PATTERN})*$`);

export interface DecodedMetadata { marker?: Marker; user?: string }

/** Whether a parsed metadata object holds `managed_by` and `metadata` only (read for every live object: no key list made). */
function onlyMarkerKeys(obj: Record<string, unknown>): boolean {
  for (const k in obj) if (k !== 'managed_by' && k !== 'metadata') return false;
  return true;
}

/**
 * A marker exactly as `encodeMetadata` writes one with no fingerprints, no protection and no user
 * string: most live objects' metadata. Read without a JSON parser (half its time, every object of
 * every plan); anything else, escapes included, is parsed.
 */
const PLAIN_MARKER = new RegExp(`^\\{"managed_by":\\{"id":"([^"\\\\]+)","stack":"([^"\\\\]+)","tool":"${TOOL}","v":${MARKER_VERSION}\\}\\}$`);

/** Splits stored metadata into our marker and the user's own string; foreign metadata is all user's. */
export function decodeMetadata(stored: unknown): DecodedMetadata {
  if (typeof stored !== 'string' || stored === '') return {};
  const plain = PLAIN_MARKER.exec(stored);
  if (plain) {
    const [, id, stack] = plain;
    // The keys in the order JSON.parse gives them.
    if (STACK_NAME.test(stack) && IDENTITY.test(id)) return { marker: { id, stack, tool: TOOL, v: MARKER_VERSION } };
    return { user: stored };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(stored);
  } catch {
    return { user: stored };
  }
  const obj = parsed as Record<string, unknown> | null;
  const marker = obj && typeof obj === 'object' && !Array.isArray(obj) ? (obj.managed_by as Marker | undefined) : undefined;
  const shaped = marker && typeof marker === 'object' && marker.tool === TOOL && typeof marker.stack === 'string' &&
    STACK_NAME.test(marker.stack) && typeof marker.id === 'string' && IDENTITY.test(marker.id) &&
    onlyMarkerKeys(obj!) && (obj!.metadata === undefined || typeof obj!.metadata === 'string');
  if (!shaped) return { user: stored };
  return { marker, user: obj!.metadata as string | undefined };
}

/**
 * Local fingerprint of a secret: HMAC-SHA256 keyed by stack, identity and field path, all of which
 * a reader of the marker sees, so a guess can be tested against it offline. The planner replaces it
 * with the service's (`keyFingerprints`, keyed by what only the service holds); it stays only where
 * the target offers none (an empty embedded state, a service from before), and in `validate`.
 * 128 bits, base64url.
 */
export function fingerprintSecret(stack: string, identity: string, path: string, secret: string): string {
  return createHmac('sha256', `${TOOL}\0${stack}\0${identity}\0${path}`).update(secret).digest('base64url').slice(0, 22);
}

/** Bytes the user's metadata may take next to a marker, or how far over the limit it is. */
export function metadataBytes(marker: Marker, user: string | undefined): number {
  return utf8Bytes(encodeMetadata(marker, user));
}
