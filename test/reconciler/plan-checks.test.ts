import { describe, expect, it } from 'vitest';
import { BODY_LIMIT } from '../../src/contract/limits.js';
import { checks, foreignChildren, missingRawRefs, oversizedRequests } from '../../src/reconciler/plan/phases/checks.js';
import type { Planned } from '../../src/reconciler/plan/phases/steps.js';
import type { Step } from '../../src/reconciler/plan/types.js';
import { context, live, numberedId, upToSteps, want } from '../helpers/plan-phases.js';

const edge = (n: number) => numberedId('edghts', n);
const route = (n: number) => numberedId('edghtsrt', n);
const pool = (n: number) => numberedId('bkdfo', n);

/** The checks phase alone: each check's warning, and none where there is nothing to say. */
describe('planner phase: checks', () => {
  it('a raw id naming an object of a kind the plan read in full that does not exist: its step would fail with 400', () => {
    const ctx = context([
      want('failoverBackend', 'FailoverBackend/front', { backends: [pool(7), pool(1)] }),
      want('failoverBackend', 'FailoverBackend/kept', { backends: [pool(9)] }),
    ], [
      live('failoverBackend', pool(1), { backends: ['bkdhr_x'] }),
      live('failoverBackend', pool(2), { backends: [pool(9)] }, { identity: 'FailoverBackend/kept' }),
    ]);
    const { matched, planned } = upToSteps(ctx);
    // Only objects with a step are looked at: FailoverBackend/kept is unchanged, its missing id was accepted before.
    expect(missingRawRefs(ctx, matched, planned)).toEqual([
      `FailoverBackend/front: backends[0] names failover backend ${pool(7)}, which this account does not have: its step will fail (400) unless it is created first`,
    ]);
  });

  it('children of a kept object that this stack does not manage are left alone, and said so', () => {
    const web = live('httpsEdge', edge(1), {}, { identity: 'HTTPSEdge/web' });
    const theirs = live('httpsEdgeRoute', route(1), { match_type: 'path_prefix', match: '/a/' }, { identity: 'HTTPSEdge/x/routes/a', stack: 'staging', parentId: edge(1) });
    const nobody = live('httpsEdgeRoute', route(2), { match_type: 'path_prefix', match: '/b/' }, { parentId: edge(1) });
    const ctx = context([want('httpsEdge', 'HTTPSEdge/web', {})], [web, theirs, nobody]);
    const { matched } = upToSteps(ctx);
    expect(foreignChildren(ctx, matched)).toEqual([
      `HTTPSEdge/web holds HTTPS edge route ${route(1)}, which stack "staging" manages: left alone`,
      `HTTPSEdge/web holds HTTPS edge route ${route(2)}, which no stack manages: left alone (export --all shows it; write it into the manifests and plan with --adopt to manage it here)`,
    ]);
    // Adopted, the route is the stack's own: nothing to say.
    const adopted = context([want('httpsEdge', 'HTTPSEdge/web', {}), want('httpsEdgeRoute', 'HTTPSEdge/web/routes/b', { match_type: 'path_prefix', match: '/b/' })], [web, nobody], { adopt: true });
    expect(foreignChildren(adopted, upToSteps(adopted).matched)).toEqual([]);
  });

  it('a step whose request body is over the service\'s 1 MiB limit would fail with 413', () => {
    const step = (id: string, bytes: number): Step => ({
      id, action: 'update', object: { kind: 'httpsEdge', identity: id.split(':')[0], name: 'x' },
      request: { method: 'PATCH', path: '/edges/https/x', body: { description: 'x'.repeat(bytes) } }, changes: [], dependsOn: [],
    });
    const planned: Planned = { steps: [step('HTTPSEdge/small:update', 1000), step('HTTPSEdge/big:update', BODY_LIMIT)], stepsOf: new Map(), retired: [], protectedChanges: [], warnings: [], settled: [] };
    expect(oversizedRequests(planned)).toEqual([
      'HTTPSEdge/big:update: its request body is about 1025 KiB, over the service\'s 1 MiB limit: the step will fail (413); spread the values over fewer or smaller fields',
    ]);
  });

  it('a plan with nothing to warn of has no warning; the checks come in their order', () => {
    const clean = context([want('httpsEdge', 'HTTPSEdge/web', { hostports: ['a.example:443'] })], []);
    const c = upToSteps(clean);
    expect(checks(clean, c.matched, c.planned)).toEqual([]);
    const web = live('httpsEdge', edge(1), {}, { identity: 'HTTPSEdge/web' });
    const ctx = context([want('httpsEdge', 'HTTPSEdge/web', {}), want('failoverBackend', 'FailoverBackend/f', { backends: [pool(7)] })],
      [web, live('httpsEdgeRoute', route(2), { match_type: 'path_prefix', match: '/b/' }, { parentId: edge(1) })]);
    const { matched, planned } = upToSteps(ctx);
    expect(checks(ctx, matched, planned).map((w) => w.split(' ')[0])).toEqual(['FailoverBackend/f:', 'HTTPSEdge/web']);
  });
});
