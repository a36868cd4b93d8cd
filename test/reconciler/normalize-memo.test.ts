import { describe, expect, it } from 'vitest';
import { kindByName } from '../../src/kinds/registry.js';
import { DEFAULT_CONFIG, normalize, NormMemo, type Symbolize } from '../../src/reconciler/plan/normalize.js';

const route = kindByName('httpsEdgeRoute');
const POOL = 'bkdfo_000000000000000000000000001';
const OTHER = 'bkdfo_000000000000000000000000002';
// The manifest side names the backend; the live side holds its id.
const want = () => ({ match_type: 'path_prefix', match: '/api/', backend: { backend_id: { $ref: 'FailoverBackend/pool' } } });
const have = (id = POOL) => ({ match_type: 'path_prefix', match: '/api/', backend: { enabled: true, backend_id: id } });
const knows = (ids: Record<string, string>): Symbolize => (id) => (ids[id] ? { $ref: ids[id] } : id);

describe('NormMemo: pairs compared ahead of the plan', () => {
  it('settle a pair while every id they looked up still reads the same', () => {
    const memo = new NormMemo('plan');
    const w = want(), h = have();
    const early = knows({ [POOL]: 'FailoverBackend/pool' });
    memo.normalForm(route, w, early, DEFAULT_CONFIG);
    memo.normalForm(route, h, early, DEFAULT_CONFIG);
    memo.settleAhead(w, h, DEFAULT_CONFIG);
    expect(memo.settled(w, h, knows({ [POOL]: 'FailoverBackend/pool', [OTHER]: 'FailoverBackend/x' }), DEFAULT_CONFIG)).toBe(true);
    // The id now reads as another object (or as no managed object): not known any more.
    expect(memo.settled(w, h, knows({ [POOL]: 'FailoverBackend/renamed' }), DEFAULT_CONFIG)).toBe(false);
    expect(memo.settled(w, h, knows({}), DEFAULT_CONFIG)).toBe(false);
    // Another desired body, or another config: not known.
    expect(memo.settled(want(), h, early, DEFAULT_CONFIG)).toBe(false);
    expect(memo.settled(w, h, early, { vendorPrefix: 'other' })).toBe(false);
  });

  it('a settled live body asked for its normal form again gets its own, keys in its own order', () => {
    // The same values as the manifest's, the module's keys in another order.
    const memo = new NormMemo('plan');
    const w = want(), h = { match_type: 'path_prefix', match: '/api/', backend: { backend_id: POOL, enabled: true } };
    const sym = knows({ [POOL]: 'FailoverBackend/pool' });
    memo.normalForm(route, w, sym, DEFAULT_CONFIG);
    memo.normalForm(route, h, sym, DEFAULT_CONFIG);
    memo.settleAhead(w, h, DEFAULT_CONFIG);
    expect(memo.settled(w, h, sym, DEFAULT_CONFIG)).toBe(true);
    const { fields, modules } = memo.normalForm(route, h, sym, DEFAULT_CONFIG);
    expect(JSON.stringify({ fields, modules })).toBe(JSON.stringify(normalize(route, h, sym, DEFAULT_CONFIG)));
  });

  it('remember nothing for a pair that differs, or that was compared before the id was known', () => {
    const memo = new NormMemo('plan');
    const w = want(), h = have(OTHER);
    const sym = knows({ [POOL]: 'FailoverBackend/pool', [OTHER]: 'FailoverBackend/other' });
    memo.normalForm(route, w, sym, DEFAULT_CONFIG);
    memo.normalForm(route, h, sym, DEFAULT_CONFIG);
    memo.settleAhead(w, h, DEFAULT_CONFIG);
    expect(memo.settled(w, h, sym, DEFAULT_CONFIG)).toBe(false);

    // Compared while the backend's page had not come: the id read as itself, so the pair differed.
    const memo2 = new NormMemo('plan');
    const w2 = want(), h2 = have();
    memo2.normalForm(route, w2, knows({}), DEFAULT_CONFIG);
    memo2.normalForm(route, h2, knows({}), DEFAULT_CONFIG);
    memo2.settleAhead(w2, h2, DEFAULT_CONFIG);
    expect(memo2.settled(w2, h2, knows({ [POOL]: 'FailoverBackend/pool' }), DEFAULT_CONFIG)).toBe(false);
  });
});
