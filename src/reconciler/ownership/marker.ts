import { createHash, createHmac } from 'node:crypto';
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
  /**
   * What the stack last wrote, as a short hash per field or module of the manifests' normal form
   * (`description=AbCd1234;hostports=…`, `appliedHashes`): a plan tells a live value that moved
   * (drift: its hash is still the manifests') from a manifest change. Secrets count by their
   * salted fingerprints only. Absent on markers written before it, and where it would not fit.
   */
  h?: string;
}

/** Stored metadata: `{"managed_by": <marker>, "metadata": <the user's own string>}` as canonical JSON. */
export function encodeMetadata(marker: Marker, user: string | undefined): string {
  const m: Marker = { ...marker };
  if (!m.fp || Object.keys(m.fp).length === 0) delete m.fp;
  if (!m.protect) delete m.protect;
  if (!m.h) delete m.h;
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
const PLAIN_MARKER = new RegExp(`^\\{"managed_by":\\{(?:"h":"([^"\\\\]*)",)?"id":"([^"\\\\]+)","stack":"([^"\\\\]+)","tool":"${TOOL}","v":${MARKER_VERSION}\\}\\}$`);

/** Splits stored metadata into our marker and the user's own string; foreign metadata is all user's. */
export function decodeMetadata(stored: unknown): DecodedMetadata {
  if (typeof stored !== 'string' || stored === '') return {};
  const plain = PLAIN_MARKER.exec(stored);
  if (plain) {
    const [, h, id, stack] = plain;
    // The keys in the order JSON.parse gives them.
    if (STACK_NAME.test(stack) && IDENTITY.test(id)) return { marker: h === undefined ? { id, stack, tool: TOOL, v: MARKER_VERSION } : { h, id, stack, tool: TOOL, v: MARKER_VERSION } };
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

/** A secret as the hashes see it: its salted fingerprint, never its source or value. */
function hashable(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(hashable);
  if (v && typeof v === 'object') {
    if ('$secret' in v && 'fingerprint' in v) return { fingerprint: (v as { fingerprint: unknown }).fingerprint };
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, hashable(x)]));
  }
  return v;
}

/** Keys of the hashed values: field and module names (`Marker.h` is parsed by them). */
const HASH_KEY = /^[a-z_][a-z0-9_]{0,63}$/;

/**
 * `Marker.h` for values by field or module name (a normal form's fields and modules, the user's
 * metadata): a 48-bit hash of each, sorted by name. Values that are absent are left out.
 */
export function appliedHashes(values: Record<string, unknown>): string {
  const out: string[] = [];
  for (const k of Object.keys(values).sort()) {
    if (values[k] === undefined || !HASH_KEY.test(k)) continue;
    out.push(`${k}=${createHash('sha256').update(canonicalJson(hashable(values[k]))).digest('base64url').slice(0, 8)}`);
  }
  return out.join(';');
}

/** `Marker.h` read back by name; undefined for a marker with none (or one this version cannot read). */
export function parseHashes(h: unknown): Map<string, string> | undefined {
  if (typeof h !== 'string') return undefined;
  const out = new Map<string, string>();
  if (h === '') return out;
  for (const part of h.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) return undefined;
    out.set(part.slice(0, eq), part.slice(eq + 1));
  }
  return out;
}
