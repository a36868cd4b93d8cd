import { encodeMetadata, MARKER_VERSION, METADATA_LIMIT, metadataBytes, parseHashes, TOOL, type Marker } from '../../ownership/marker.js';
import type { DesiredObject, ObservedObject } from '../state.js';
import { MARKER_CHANGE, type Change, type Step } from '../types.js';

/**
 * The ownership marker a plan of `stack` writes on `d`; with `h` (`appliedHashes` of what it
 * writes) when the metadata has room for them.
 */
export function markerOf(stack: string, d: DesiredObject, h?: string): Marker {
  const m: Marker = { tool: TOOL, v: MARKER_VERSION, stack, id: d.identity, fp: d.fp, protect: d.protect };
  if (h && metadataBytes({ ...m, h }, d.userMetadata) <= METADATA_LIMIT) m.h = h;
  return m;
}

/**
 * Whether a stored marker encodes as the one this plan would write for `d` (what
 * `encodeMetadata` writes), compared field by field: no marker is built or encoded. The hashes
 * of what was applied (`h`) are not compared: they alone never make a step (markers written
 * before them stay as they are until the object changes).
 */
export function markedAs(stack: string, d: DesiredObject, b: Marker | undefined): boolean {
  if (!b || (b.protect !== undefined && typeof b.protect !== 'boolean')) return false;
  if (b.tool !== TOOL || b.v !== MARKER_VERSION || b.stack !== stack || b.id !== d.identity || !d.protect !== !b.protect) return false;
  return sameFingerprints(d.fp, b) && onlyMarkerKeys(b);
}

/** Whether `o`'s metadata is what a plan of `stack` writes for `d`: the user's own, and the marker. */
export function sameMetadata(stack: string, d: DesiredObject, o: ObservedObject): boolean {
  return (d.userMetadata ?? '') === (o.userMetadata ?? '') && markedAs(stack, d, o.marker);
}

/** The user's metadata and the marker; the marker changes with secrets, stack, protect or adoption. */
export function metadataChanges(stack: string, d: DesiredObject, o: ObservedObject): Change[] {
  const out: Change[] = [];
  if ((d.userMetadata ?? '') !== (o.userMetadata ?? '')) out.push({ path: 'metadata', before: o.userMetadata, after: d.userMetadata });
  if (!markedAs(stack, d, o.marker)) {
    const describe = (m?: Marker) => (m ? `${m.stack}/${m.id}${m.protect ? ' (protected)' : ''}` : '(none)');
    const strip = (m: Marker) => encodeMetadata({ ...m, fp: {}, h: undefined }, undefined);
    const mine = markerOf(stack, d);
    const secretsOnly = o.marker && strip(o.marker) === strip(mine);
    if (!secretsOnly) out.push({ path: MARKER_CHANGE, before: describe(o.marker), after: describe(mine) });
    else if (!out.length) out.push({ path: MARKER_CHANGE, before: 'secret fingerprints', after: 'secret fingerprints', sensitive: true });
  }
  return out;
}

/** The same secret fingerprints (an absent map is an empty one). */
function sameFingerprints(fa: Record<string, string> | undefined, b: Marker): boolean {
  const fb = b.fp;
  let n = 0;
  for (const k in fa) {
    if (!fb || fb[k] !== fa[k]) return false;
    n++;
  }
  for (const _ in fb) if (--n < 0) return false;
  return true;
}

/** Anything else a stored marker carries (a field a later version added) is a difference. */
function onlyMarkerKeys(b: Marker): boolean {
  for (const k in b) if (!MARKER_KEYS.has(k)) return false;
  return true;
}

const MARKER_KEYS = new Set(['tool', 'v', 'stack', 'id', 'fp', 'protect', 'h']);

/**
 * Marks drift among an existing object's steps: each change of a field or module whose value in
 * the manifests is the one the stack last applied (its hash in the stored marker, `Marker.h`),
 * so the live value is what moved. `current`: the same hashes of what the manifests say now.
 * `planned(key)`: the value refers to an object this plan creates or replaces (the change is the
 * plan's own, not drift). Nothing is marked on an object whose marker records no hashes.
 */
export function markDrift(steps: readonly Step[], stored: Marker | undefined, current: string, planned: (key: string) => boolean): void {
  const applied = parseHashes(stored?.h);
  if (!applied) return;
  const now = parseHashes(current)!;
  for (const s of steps) {
    for (const c of s.changes) {
      if (c.path === MARKER_CHANGE) continue;
      const dot = c.path.indexOf('.');
      const key = dot < 0 ? c.path : c.path.slice(0, dot);
      if (applied.get(key) !== now.get(key) || planned(key)) continue;
      c.drift = true;
      s.drift = true;
    }
  }
}
