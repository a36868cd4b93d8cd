import { describe, expect, it } from 'vitest';
import { DEFAULT_THRESHOLD, safetyBlocks } from '../../src/reconciler/plan/safety.js';
import type { ObservedObject } from '../../src/reconciler/plan/state.js';
import { MARKER_CHANGE, type Action, type Change, type Step } from '../../src/reconciler/plan/types.js';

/** Ten owned routes (the threshold applies from ten) and four steps on four of them: 40 % > 30 %. */
const observed = Array.from({ length: 10 }, (_, i) => ({ id: `r${i}`, kind: { name: 'httpsEdgeRoute' }, owner: { type: 'this' } })) as unknown as ObservedObject[];
function onFour(action: Action, changes: Change[]): Step[] {
  return [0, 1, 2, 3].map((i) => ({ id: `s${i}`, action, object: { kind: 'httpsEdgeRoute', identity: `E/routes/r${i}`, name: `r${i}`, id: `r${i}` }, changes, dependsOn: [] }) as unknown as Step);
}
const blocked = (steps: Step[]) => safetyBlocks(steps, observed, DEFAULT_THRESHOLD).map((b) => `${b.kind} ${b.changed}/${b.owned}`);

describe('the safety threshold counts what would be removed or changed', () => {
  it('blocks deletes, module deletes and changed values on more than 30 % of a kind', () => {
    expect(blocked(onFour('delete', []))).toEqual(['httpsEdgeRoute 4/10']);
    expect(blocked(onFour('module.delete', []))).toEqual(['httpsEdgeRoute 4/10']);
    expect(blocked(onFour('module.put', [{ path: 'backend.backend_id', before: 'bkdfo_a', after: 'bkdfo_b' }]))).toEqual(['httpsEdgeRoute 4/10']);
    expect(blocked(onFour('update', [{ path: 'description', before: 'x', after: undefined }]))).toEqual(['httpsEdgeRoute 4/10']);
    // A secret that changed counts (its value is not shown, but it was there).
    expect(blocked(onFour('update', [{ path: MARKER_CHANGE, before: 'secret fingerprints', after: 'secret fingerprints', sensitive: true }, { path: 'oidc.client_secret', before: '(sensitive)', after: '(sensitive)', sensitive: true }]))).toEqual(['httpsEdgeRoute 4/10']);
  });

  it('does not count adding what an object lacks: a module (the backend an interrupted apply had not attached), a value, an ownership marker', () => {
    // The apply that finishes an interrupted one must not be blocked: its routes were created, their backends not yet attached.
    expect(blocked(onFour('module.put', [{ path: 'backend.backend_id', after: 'bkdfo_b' }, { path: 'backend.enabled', after: true }]))).toEqual([]);
    expect(blocked(onFour('update', [{ path: 'description', after: 'new' }]))).toEqual([]);
    // Renames and adoption change only the marker.
    expect(blocked(onFour('update', [{ path: MARKER_CHANGE, before: 'prod/E/routes/old', after: 'prod/E/routes/new' }]))).toEqual([]);
  });
});
