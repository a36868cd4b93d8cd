import { describe, expect, it } from 'vitest';
import { match } from '../../src/reconciler/plan/phases/match.js';
import { planSteps } from '../../src/reconciler/plan/phases/steps.js';
import type { DesiredObject, ObservedObject } from '../../src/reconciler/plan/state.js';
import { MARKER_CHANGE } from '../../src/reconciler/plan/types.js';
import { decodeMetadata } from '../../src/reconciler/ownership/marker.js';
import type { DiffOptions } from '../../src/reconciler/plan/phases/context.js';
import { CA_PEM, CA_PEM_2 } from '../helpers/edges.js';
import { context, live, numberedId, want } from '../helpers/plan-phases.js';

const edge = (n: number) => numberedId('edghts', n);
const route = (n: number) => numberedId('edghtsrt', n);

function steps(desired: DesiredObject[], observed: ObservedObject[], opts: Partial<DiffOptions> = {}) {
  const ctx = context(desired, observed, opts);
  return planSteps(ctx, match(ctx));
}

const web = live('httpsEdge', edge(1), { hostports: ['a.example:443'] }, { identity: 'HTTPSEdge/web' });
const api = (body: Record<string, unknown>, h?: string) => live('httpsEdgeRoute', route(1), { match_type: 'path_prefix', match: '/api/', ...body }, { identity: 'HTTPSEdge/web/routes/api', parentId: edge(1), h });
const wantWeb = want('httpsEdge', 'HTTPSEdge/web', { hostports: ['a.example:443'] });
const wantApi = (body: Record<string, unknown>) => want('httpsEdgeRoute', 'HTTPSEdge/web/routes/api', { match_type: 'path_prefix', match: '/api/', ...body });

/** The steps phase alone: what each matched manifest object needs done. */
describe('planner phase: steps', () => {
  it('creates a new object with its marker, and a new child after its parent, under the parent\'s placeholder', () => {
    const p = steps([wantWeb, wantApi({})], []);
    expect(p.steps.map((s) => [s.id, s.request.method, s.request.path, s.dependsOn])).toEqual([
      ['HTTPSEdge/web:create', 'POST', '/edges/https', []],
      ['HTTPSEdge/web/routes/api:create', 'POST', '/edges/https/{HTTPSEdge/web.id}/routes', ['HTTPSEdge/web:create']],
    ]);
    expect(p.steps[0]).toMatchObject({ yields: 'HTTPSEdge/web', request: { body: { hostports: ['a.example:443'] } } });
    expect((p.steps[0].request.body as { metadata: string }).metadata).toContain('"id":"HTTPSEdge/web"');
    expect([...p.stepsOf]).toEqual([['HTTPSEdge/web', ['HTTPSEdge/web:create']], ['HTTPSEdge/web/routes/api', ['HTTPSEdge/web/routes/api:create']]]);
    expect(p.retired).toEqual([]);
  });

  it('an object as the manifests say is settled: no step, no warning', () => {
    const p = steps([wantWeb], [web]);
    expect(p.steps).toEqual([]);
    expect(p.settled).toEqual(['HTTPSEdge/web']);
  });

  it('a changed field is an update: a PATCH of that field alone, with its change', () => {
    const p = steps([want('httpsEdge', 'HTTPSEdge/web', { hostports: ['a.example:443'], description: 'front' })], [web]);
    expect(p.steps).toHaveLength(1);
    expect(p.steps[0]).toMatchObject({ id: 'HTTPSEdge/web:update', action: 'update', request: { method: 'PATCH', path: `/edges/https/${edge(1)}`, body: { description: 'front' } } });
    expect(p.steps[0].changes).toEqual([{ path: 'description', after: 'front' }]);
  });

  it('a module changed in the manifests rides in a PATCH that records it in the marker; changed by hand (drift), it is put back with a PUT', () => {
    const desired = [wantWeb, wantApi({ compression: { enabled: false } })];
    const p = steps(desired, [web, api({ compression: { enabled: true } })]);
    expect(p.steps.map((s) => [s.id, s.request.method, s.request.path])).toEqual([
      ['HTTPSEdge/web/routes/api:update', 'PATCH', `/edges/https/${edge(1)}/routes/${route(1)}`],
    ]);
    const body = p.steps[0].request.body as { compression: unknown; metadata: string };
    expect(body.compression).toEqual({ enabled: false });
    // What the create of the same manifest object records.
    const created = steps(desired, [web]).steps[0].request.body as { metadata: string };
    const h = decodeMetadata(created.metadata).marker!.h!;
    expect(decodeMetadata(body.metadata).marker!.h).toBe(h);
    const drift = steps(desired, [web, api({ compression: { enabled: true } }, h)]);
    expect(drift.steps.map((s) => [s.id, s.request.method, s.request.path, !!s.drift])).toEqual([
      ['HTTPSEdge/web/routes/api:module.put:compression', 'PUT', `/edges/https/${edge(1)}/routes/${route(1)}/compression`, true],
    ]);
    expect(drift.steps[0].request.body).toEqual({ enabled: false });
  });

  it('a module removed is a module DELETE; a module changed beside a field change rides in the PATCH', () => {
    const removed = steps([wantWeb, wantApi({})], [web, api({ compression: { enabled: true } })]);
    expect(removed.steps.map((s) => [s.id, s.request.method])).toEqual([['HTTPSEdge/web/routes/api:module.delete:compression', 'DELETE']]);
    const both = steps([wantWeb, wantApi({ description: 'api', compression: { enabled: false } })], [web, api({ compression: { enabled: true } })]);
    expect(both.steps.map((s) => s.id)).toEqual(['HTTPSEdge/web/routes/api:update']);
    expect(both.steps[0].request.body).toMatchObject({ description: 'api', compression: { enabled: false } });
  });

  it('fail closed: a new object\'s traffic module goes on after its guard modules are in place', () => {
    const p = steps([wantWeb, wantApi({ ip_restriction: { ip_policy_ids: ['ipp_1'] }, backend: { backend_id: 'bkdhr_x' } })], [web]);
    expect(p.steps.map((s) => [s.id, s.dependsOn])).toEqual([
      ['HTTPSEdge/web/routes/api:create', []],
      ['HTTPSEdge/web/routes/api:module.put:backend', ['HTTPSEdge/web/routes/api:create']],
    ]);
    expect(p.steps[0].request.body).not.toHaveProperty('backend');
    expect(p.steps[1].reason).toBe('fail closed: backend is attached only after the ip_restriction module is in place');
  });

  it('a replace creates the new object and retires the old one for the deletes phase; a protected one is recorded', () => {
    const ca = live('certificateAuthority', 'ca_1', { ca_pem: CA_PEM }, { identity: 'CertificateAuthority/root' });
    const p = steps([want('certificateAuthority', 'CertificateAuthority/root', { ca_pem: CA_PEM_2 }, { protect: true })], [ca]);
    expect(p.steps.map((s) => [s.id, s.action, s.object.id])).toEqual([['CertificateAuthority/root:replace', 'replace', 'ca_1']]);
    expect(p.steps[0].reason).toContain('ca_pem cannot change in place');
    expect(p.retired).toEqual([{ o: ca, identity: 'CertificateAuthority/root', id: 'CertificateAuthority/root:delete-replaced', reason: 'replaced by the new certificate authority (CertificateAuthority/root:replace)' }]);
    expect(p.protectedChanges).toEqual([{ step: 'CertificateAuthority/root:replace', identity: 'CertificateAuthority/root', id: 'ca_1', action: 'replace' }]);
  });

  it('an adopted object gets its marker stamped; a renamed one its marker renamed', () => {
    const nobody = live('httpsEdge', edge(2), { hostports: ['b.example:443'] });
    const adopted = steps([want('httpsEdge', 'HTTPSEdge/b', { hostports: ['b.example:443'] })], [nobody], { adopt: true });
    expect(adopted.steps[0]).toMatchObject({ id: 'HTTPSEdge/b:update', reason: `adopts unmanaged HTTPS edge ${edge(2)}: stamps the ownership marker` });
    expect(adopted.steps[0].changes).toEqual([{ path: MARKER_CHANGE, before: '(none)', after: 'prod/HTTPSEdge/b' }]);
    const renamed = steps([want('httpsEdge', 'HTTPSEdge/new', { hostports: ['a.example:443'] }, { previousIdentities: ['HTTPSEdge/web'] })], [web]);
    expect(renamed.steps[0]).toMatchObject({ id: 'HTTPSEdge/new:update', reason: 'renamed from HTTPSEdge/web: the object is kept, its ownership marker renamed' });
    expect(Object.keys(renamed.steps[0].request.body as object)).toEqual(['metadata']);
  });

  it('a field removed from the manifest goes back to its default: PATCH cannot leave it out', () => {
    const p = steps([want('failoverBackend', 'FailoverBackend/app', { backends: ['bkdhr_x'] })], [
      live('failoverBackend', numberedId('bkdfo', 1), { backends: ['bkdhr_x'], description: 'old' }, { identity: 'FailoverBackend/app' }),
    ]);
    expect(p.steps.map((s) => [s.id, (s.request.body as { description: unknown }).description])).toEqual([['FailoverBackend/app:update', '']]);
    expect(p.steps[0].changes).toEqual([{ path: 'description', before: 'old' }]);
  });

  it('with `only`, the other manifest objects are matched (references read as their ids) but get no step', () => {
    const p = steps([want('httpsEdge', 'HTTPSEdge/web', { hostports: ['a.example:443'], description: 'x' }), want('httpsEdge', 'HTTPSEdge/new', {})], [web], { only: new Set(['HTTPSEdge/new']) });
    expect(p.steps.map((s) => s.id)).toEqual(['HTTPSEdge/new:create']);
  });

  it('a conflicted object gets no step', () => {
    const p = steps([want('httpsEdge', 'HTTPSEdge/b', { hostports: ['b.example:443'] })], [live('httpsEdge', edge(2), { hostports: ['b.example:443'] })]);
    expect(p.steps).toEqual([]);
    expect(p.stepsOf.size).toBe(0);
  });
});
