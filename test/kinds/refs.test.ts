import { describe, expect, it } from 'vitest';
import { forEachRefValue } from '../../src/kinds/refs.js';
import { KINDS, kindByName } from '../../src/kinds/registry.js';
import { collectRefs } from '../../src/service/writes/resources.js';
import { refValues } from '../../src/reconciler/manifests/object-values.js';

const seen = (kind: string, body: Record<string, unknown>) => {
  const out: string[] = [];
  forEachRefValue(kindByName(kind), body, (def, value, module, index) => out.push(`${module ? module.name + '.' : ''}${def.field}${index === undefined ? '' : `[${index}]`}=${value}`));
  return out;
};

describe('the one walk over an object\'s references', () => {
  it('finds own fields, then each module\'s, with list positions; skips what is not an id', () => {
    const route = {
      match: '/', backend: { backend_id: 'bkdfo_1' }, ip_restriction: { ip_policy_ids: ['ipp_a', 7, 'ipp_b'] },
    };
    expect(seen('httpsEdgeRoute', route)).toEqual(['backend.backend_id=bkdfo_1', 'ip_restriction.ip_policy_ids[0]=ipp_a', 'ip_restriction.ip_policy_ids[2]=ipp_b']);
    expect(seen('failoverBackend', { backends: ['bkdfo_x', 'bkdhttp_y'] })).toEqual(['backends[0]=bkdfo_x', 'backends[1]=bkdhttp_y']);
    // A module switched off by `null`, or a list where an id belongs, holds no reference.
    expect(seen('httpsEdgeRoute', { backend: null, ip_restriction: { ip_policy_ids: 'ipp_a' } })).toEqual([]);
  });

  it('is what the service stores and the reconciler plans with', () => {
    const kind = kindByName('failoverBackend');
    const body = { backends: ['bkdfo_x', 'bkdhttp_y'] };
    // The service records only ids of objects it stores (the prefix); the planner sees every value.
    expect(collectRefs(kind, body).map((r) => [r.label, r.to_id])).toEqual([['backends[0]', 'bkdfo_x']]);
    expect(refValues({ kind, body }).map((r) => [r.path, r.value])).toEqual([[['backends', 0], 'bkdfo_x'], [['backends', 1], 'bkdhttp_y']]);
    expect(refValues({ kind, body: {} })).toEqual([]);
  });

  it('every reference the kinds declare names a plain field (the walk reads no paths)', () => {
    for (const kind of KINDS) {
      for (const def of [...(kind.refs ?? []), ...(kind.modules ?? []).flatMap((m) => m.refs ?? [])]) {
        expect(def.field, `${kind.name}: ${def.field}`).toMatch(/^[a-z_]+$/);
      }
    }
  });
});
