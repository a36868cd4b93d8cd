import { describe, expect, it } from 'vitest';
import type { DiffOptions } from '../../src/reconciler/plan/phases/context.js';
import { planDeletes } from '../../src/reconciler/plan/phases/deletes.js';
import type { DesiredObject, ObservedObject } from '../../src/reconciler/plan/state.js';
import { CA_PEM, CA_PEM_2 } from '../helpers/edges.js';
import { context, live, numberedId, upToSteps, want } from '../helpers/plan-phases.js';

const edge = (n: number) => numberedId('edghts', n);
const route = (n: number) => numberedId('edghtsrt', n);
const pool = (n: number) => numberedId('bkdfo', n);

function deletes(desired: DesiredObject[], observed: ObservedObject[], opts: Partial<DiffOptions> = {}) {
  const ctx = context(desired, observed, opts);
  const { matched, planned } = upToSteps(ctx);
  return { planned, ...planDeletes(ctx, matched, planned) };
}

const deps = (steps: readonly { id: string; dependsOn: string[] }[]) => Object.fromEntries(steps.map((s) => [s.id, s.dependsOn]));

/** The deletes phase alone: prunes, deletes of replaced objects, and the order unique values impose. */
describe('planner phase: deletes', () => {
  it('prunes an object of this stack the manifests no longer have; its children go with it', () => {
    const old = live('httpsEdge', edge(1), {}, { identity: 'HTTPSEdge/old' });
    const child = live('httpsEdgeRoute', route(1), { match_type: 'path_prefix', match: '/' }, { identity: 'HTTPSEdge/old/routes/root', parentId: edge(1) });
    const d = deletes([], [old, child]);
    expect(d.steps.map((s) => [s.id, s.request.method, s.request.path, s.reason])).toEqual([
      ['HTTPSEdge/old:delete', 'DELETE', `/edges/https/${edge(1)}`, 'no longer in the manifests (prune)'],
    ]);
    expect(d.warnings).toEqual([]);
  });

  it('leaves alone what it does not own, and deletes a duplicate copy of a kept object', () => {
    const keep = live('failoverBackend', pool(1), { backends: ['bkdhr_x'] }, { identity: 'FailoverBackend/app' });
    const copy = live('failoverBackend', pool(2), { backends: ['bkdhr_x'] }, { identity: 'FailoverBackend/app' });
    const theirs = live('failoverBackend', pool(3), { backends: ['bkdhr_x'] }, { identity: 'FailoverBackend/x', stack: 'staging' });
    const nobody = live('failoverBackend', pool(4), { backends: ['bkdhr_x'] });
    const d = deletes([want('failoverBackend', 'FailoverBackend/app', { backends: ['bkdhr_x'] })], [keep, copy, theirs, nobody]);
    expect(d.steps.map((s) => [s.id, s.object.id])).toEqual([[`FailoverBackend/app:delete:${pool(2)}`, pool(2)]]);
    expect(d.steps[0].reason).toBe(`duplicate of FailoverBackend/app (${pool(1)}), left by an interrupted apply or two applies at once`);
  });

  it('a protected object is kept with a warning; --allow-protected-changes deletes it and records it', () => {
    const old = live('httpsEdge', edge(1), {}, { identity: 'HTTPSEdge/old', protect: true });
    const kept = deletes([], [old]);
    expect(kept.steps).toEqual([]);
    expect(kept.warnings).toEqual([`HTTPSEdge/old (${edge(1)}) is no longer in the manifests but is protected: kept`]);
    expect(kept.protectedChanges).toEqual([]);
    const allowed = deletes([], [old], { allowProtected: true });
    expect(allowed.steps.map((s) => s.id)).toEqual(['HTTPSEdge/old:delete']);
    expect(allowed.protectedChanges).toEqual([{ step: 'HTTPSEdge/old:delete', identity: 'HTTPSEdge/old', id: edge(1), action: 'delete' }]);
  });

  it('a parent holding another stack\'s child is kept, with a warning naming the child', () => {
    const old = live('httpsEdge', edge(1), {}, { identity: 'HTTPSEdge/old' });
    const theirs = live('httpsEdgeRoute', route(1), { match_type: 'path_prefix', match: '/' }, { identity: 'HTTPSEdge/x/routes/r', stack: 'staging', parentId: edge(1) });
    const d = deletes([], [old, theirs]);
    expect(d.steps).toEqual([]);
    expect(d.warnings).toEqual([`HTTPSEdge/old (${edge(1)}) is no longer in the manifests but is kept: deleting it would delete HTTPSEdge/x/routes/r of stack "staging", which this stack does not own (delete or move it first)`]);
  });

  it('a prune waits for the update that drops the last reference to it; one still referenced by an object left alone is refused', () => {
    const app = live('failoverBackend', pool(1), { backends: ['bkdhr_x'] }, { identity: 'FailoverBackend/app' });
    const front = live('failoverBackend', pool(2), { backends: [pool(1)] }, { identity: 'FailoverBackend/front' });
    const moved = deletes([want('failoverBackend', 'FailoverBackend/front', { backends: ['bkdhr_y'] })], [app, front]);
    expect(deps(moved.steps)).toEqual({ 'FailoverBackend/front:update': [], 'FailoverBackend/app:delete': ['FailoverBackend/front:update'] });
    const foreign = live('failoverBackend', pool(3), { backends: [pool(1)] });
    const refused = deletes([], [app, foreign]);
    expect(refused.steps).toEqual([]);
    expect(refused.warnings).toEqual([`FailoverBackend/app (${pool(1)}) is not deleted: still used by failover backend ${pool(3)}`]);
  });

  it('a replaced object is deleted after its referrers moved to the new one, and is not counted as a prune', () => {
    const ca = live('certificateAuthority', 'ca_1', { ca_pem: CA_PEM }, { identity: 'CertificateAuthority/root' });
    const web = live('httpsEdge', edge(1), { mutual_tls: { certificate_authority_ids: ['ca_1'] } }, { identity: 'HTTPSEdge/web' });
    const d = deletes([
      want('certificateAuthority', 'CertificateAuthority/root', { ca_pem: CA_PEM_2 }),
      want('httpsEdge', 'HTTPSEdge/web', { mutual_tls: { certificate_authority_ids: [{ $ref: 'CertificateAuthority/root' }] } }),
    ], [ca, web]);
    expect(deps(d.steps)).toEqual({
      'CertificateAuthority/root:replace': [],
      // A marker with no hashes of what was applied: the module rides in the PATCH that records them.
      'HTTPSEdge/web:update': ['CertificateAuthority/root:replace'],
      'CertificateAuthority/root:delete-replaced': ['HTTPSEdge/web:update'],
    });
    expect(d.steps.find((s) => s.action === 'delete')?.reason).toBe('replaced by the new certificate authority (CertificateAuthority/root:replace)');
  });

  it('unique values: the create that takes a pruned object\'s hostport waits for its delete, and the plan hints at renamed_from', () => {
    const old = live('httpsEdge', edge(1), { hostports: ['a.example:443'] }, { identity: 'HTTPSEdge/old' });
    const d = deletes([want('httpsEdge', 'HTTPSEdge/new', { hostports: ['a.example:443'] })], [old]);
    expect(deps(d.steps)).toEqual({ 'HTTPSEdge/new:create': ['HTTPSEdge/old:delete'], 'HTTPSEdge/old:delete': [] });
    expect(d.warnings).toEqual(['HTTPSEdge/old is deleted and HTTPSEdge/new created with the same hostport: if it was renamed, write "renamed_from: old" in HTTPSEdge/new to keep the object (no delete and create)']);
  });

  it('a release, not a prune: two kept objects trading unique values free them first, in a step of their own', () => {
    const a = live('httpsEdge', edge(1), { hostports: ['a.example:443'] }, { identity: 'HTTPSEdge/a' });
    const b = live('httpsEdge', edge(2), { hostports: ['b.example:443'] }, { identity: 'HTTPSEdge/b' });
    const d = deletes([want('httpsEdge', 'HTTPSEdge/a', { hostports: ['b.example:443'] }), want('httpsEdge', 'HTTPSEdge/b', { hostports: ['a.example:443'] })], [a, b]);
    expect(d.steps.filter((s) => s.action === 'delete')).toEqual([]);
    // b frees b.example for a by its update; a cannot free a.example for b the same way (its update waits for b's): it releases it first.
    expect(deps(d.steps)).toEqual({
      'HTTPSEdge/a:update': ['HTTPSEdge/b:update', 'HTTPSEdge/a:release'],
      'HTTPSEdge/b:update': ['HTTPSEdge/a:release'],
      'HTTPSEdge/a:release': [],
    });
    expect(d.steps[2]).toMatchObject({
      action: 'update', object: { identity: 'HTTPSEdge/a', id: edge(1) },
      request: { method: 'PATCH', path: `/edges/https/${edge(1)}`, body: { hostports: [] } },
      reason: 'frees a.example:443 for HTTPSEdge/b first: the two objects trade unique values',
    });
  });

  it('adds dependencies to copies: the steps phase\'s steps are left as they were', () => {
    const old = live('httpsEdge', edge(1), { hostports: ['a.example:443'] }, { identity: 'HTTPSEdge/old' });
    const d = deletes([want('httpsEdge', 'HTTPSEdge/new', { hostports: ['a.example:443'] })], [old]);
    expect(d.planned.steps[0].dependsOn).toEqual([]);
    expect(d.steps[0]).not.toBe(d.planned.steps[0]);
    expect(d.steps[0].dependsOn).toEqual(['HTTPSEdge/old:delete']);
  });
});
