import { writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { findKind } from '../../src/kinds/registry.js';
import type { Body } from '../../src/kinds/types.js';
import { compile, isCompileError, type Compiled } from '../../src/reconciler/policy/cel.js';
import { checkPlan } from '../../src/reconciler/policy/evaluate.js';
import { loadPolicyFiles } from '../../src/reconciler/policy/load.js';
import type { DesiredObject } from '../../src/reconciler/plan/state.js';
import type { Plan } from '../../src/reconciler/plan/types.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';

afterAll(() => cleanupDirs());

const ROUTE = findKind('httpsEdgeRoute')!;
const route = (name: string, body: Body): DesiredObject => ({ kind: ROUTE, identity: `HTTPSEdge/shop/routes/${name}`, name, body, protect: false, fp: {} });
const NO_STEPS = { steps: [] } as unknown as Plan;

/** The policies of these rules (`[name, expression]`), each loaded anew as every plan loads its files. */
function policies(rules: [string, string][]) {
  const dir = manifestDir(Object.fromEntries(rules.map(([name, expression]) => [`${name}.yaml`, `kind: Policy\nname: ${name}\nmatch:\n  kinds: [HTTPSEdgeRoute]\nrules:\n  - expression: '${expression}'\n    message: ${name} failed\n`])));
  return () => loadPolicyFiles(rules.map(([name]) => `${dir}/${name}.yaml`)).set;
}

/** The failures per policy of one plan over these objects. */
function failures(set: ReturnType<ReturnType<typeof policies>>, desired: DesiredObject[]) {
  const p = checkPlan(set, { plan: NO_STEPS, desired, observed: [] });
  return Object.fromEntries(p.outcomes.map((o) => [o.policy, o.denied]));
}

describe('verdicts kept from one plan to the next (a process that plans again)', () => {
  it('a changed field is evaluated again; equal values give the same verdict on every object', () => {
    const load = policies([
      ['no-bad-match', 'object.match != "/bad"'],
      ['not-to-legacy', 'object.backend.backend_id != "FailoverBackend/legacy"'],
      ['few-fields', 'size(object) < 7'],
    ]);
    const body = (match: string, backend: string, more: Body = {}): Body => ({ match_type: 'path_prefix', match, backend: { backend_id: { $ref: `FailoverBackend/${backend}` } }, ...more });
    expect(failures(load(), [route('a', body('/ok', 'app')), route('b', body('/ok', 'app'))])).toEqual({});
    // The same identities, other values: nothing kept from the plan before answers for them.
    expect(failures(load(), [route('a', body('/bad', 'app')), route('b', body('/bad', 'legacy'))])).toEqual({ 'no-bad-match': 2, 'not-to-legacy': 1 });
    expect(failures(load(), [route('a', body('/ok', 'app')), route('b', body('/ok', 'app'))])).toEqual({});
    // A rule that reads the object as a whole is evaluated on each: same `match`, more fields.
    expect(failures(load(), [route('a', body('/ok', 'app', { description: 'x', compression: {} }))])).toEqual({ 'few-fields': 1 });
    expect(failures(load(), [route('a', body('/ok', 'app'))])).toEqual({});
  });

  it('objects are told apart by where their values are and by their shape, not by the values alone', () => {
    const load = policies([
      ['description-not-a', '!has(object.description) || object.description != "/a"'],
      ['match-set', 'has(object.match)'],
      ['two-tags', '!has(object.tags) || size(object.tags) == 2'],
    ]);
    for (let i = 0; i < 2; i++) {
      // The same value in another field; a list of two, a list of one list, a mapping, a list of three: each its own verdict.
      const p = checkPlan(load(), {
        plan: NO_STEPS,
        desired: [
          route('a', { match: '/a', tags: ['x', 'y'] }), route('b', { description: '/a', tags: ['x', 'y'] }), route('f', { match: '/a', tags: [['x', 'y']] }),
          route('c', { match: '/a', tags: { x: 'y' } }), route('d', { match: '/a', tags: ['x', 'y', 'z'] }), route('e', { match: '/a', tags: ['x', 'y'] }),
        ],
        observed: [],
      });
      expect(p.results.map((r) => `${r.policy} ${r.identity}`).sort()).toEqual([
        'description-not-a HTTPSEdge/shop/routes/b', 'match-set HTTPSEdge/shop/routes/b',
        'two-tags HTTPSEdge/shop/routes/c', 'two-tags HTTPSEdge/shop/routes/d', 'two-tags HTTPSEdge/shop/routes/f',
      ]);
    }
  });

  it('a kept verdict is shown with the message and severity of the policy as it is now', () => {
    const dir = manifestDir({});
    const write = (message: string, severity: string) => writeFileSync(`${dir}/p.yaml`, `kind: Policy\nname: root-only\nmatch:\n  kinds: [HTTPSEdgeRoute]\nrules:\n  - expression: object.match == "/"\n    message: ${message}\n    severity: ${severity}\n`);
    const run = () => checkPlan(loadPolicyFiles([`${dir}/p.yaml`]).set, { plan: NO_STEPS, desired: [route('a', { match: '/x' })], observed: [] });
    write('first words', 'deny');
    expect(run().results).toMatchObject([{ policy: 'root-only', message: 'first words', severity: 'deny' }]);
    write('second words', 'warn');
    expect(run().results).toMatchObject([{ policy: 'root-only', message: 'second words', severity: 'warn' }]);
    expect(run().outcomes).toEqual([{ policy: 'root-only', denied: 0, warned: 1, overridable: true }]);
  });

  it('a rule that cannot be evaluated fails the same way when its verdict is kept', () => {
    const load = policies([['needs-cb', 'object.circuit_breaker.tripped_duration > 10']]);
    for (let i = 0; i < 2; i++) {
      const p = checkPlan(load(), { plan: NO_STEPS, desired: [route('a', { match: '/' }), route('b', { match: '/' })], observed: [] });
      expect(p.outcomes).toEqual([{ policy: 'needs-cb', denied: 2, warned: 0, overridable: true }]);
      expect(p.results.map((r) => r.error)).toEqual([expect.stringMatching(/circuit_breaker/), expect.stringMatching(/circuit_breaker/)]);
    }
  });
  it('objects with other inputs and the same failures are each reported with their own; lists that differ by an error are told apart', () => {
    const load = policies([
      ['root-only', 'object.match == "/"'],
      ['no-compression', '!has(object.compression)'],
      ['short-timeout', 'object.circuit_breaker.tripped_duration < 10'],
    ]);
    const cb = { circuit_breaker: { tripped_duration: 5 } };
    for (let i = 0; i < 2; i++) {
      const p = checkPlan(load(), {
        plan: NO_STEPS,
        desired: [
          route('a', { match: '/a', ...cb }), route('b', { match: '/b', ...cb }), route('c', { match: '/', compression: {}, ...cb }),
          route('d', { match: '/d', compression: {}, ...cb }), route('e', { match: '/', ...cb }), route('f', { match: '/f' }),
          route('g', { match: '/g', circuit_breaker: 'x' }), route('h', { match: '/h' }),
        ],
        observed: [],
      });
      expect(p.results.map((r) => `${r.policy} ${r.identity!.slice(-1)}${r.error ? ` (${r.error})` : ''}`).sort()).toEqual([
        'no-compression c', 'no-compression d',
        'root-only a', 'root-only b', 'root-only d', 'root-only f', 'root-only g', 'root-only h',
        'short-timeout f (No such key: circuit_breaker)', 'short-timeout g (No such key: tripped_duration)', 'short-timeout h (No such key: circuit_breaker)',
      ]);
    }
  });
});

describe('what an expression depends on (kept verdicts are keyed by it)', () => {
  const inputs = (text: string) => {
    const c = compile(text, 'bool');
    if (isCompileError(c)) throw new Error(c.message);
    return (c as Compiled).inputs;
  };
  it('the fields of object it reads, and action, changes, plan', () => {
    expect(inputs('has(object.oauth) || object.match.startsWith("/a")')).toEqual({ fields: ['match', 'oauth'], action: false, changes: false, plan: false });
    expect(inputs('has(object.tls_termination) && action == "create" && "hostports" in changes')).toEqual({ fields: ['tls_termination'], action: true, changes: true, plan: false });
    expect(inputs('plan.delete.HTTPSEdge <= 5')).toEqual({ fields: [], action: false, changes: false, plan: true });
  });
  it('none when it reads live, or object other than by a field: evaluated every time', () => {
    expect(inputs('live == null || live.match == object.match')).toBeUndefined();
    expect(inputs('size(object) < 10')).toBeUndefined();
    expect(inputs('object["match"] != "/"')).toBeUndefined();
    expect(inputs('[{"match": "/"}].all(object, object.match == "/")')).toBeUndefined();
  });
});

describe('the results a plan lists', () => {
  it('at most 1,000: denials, then overridden denials, then warnings, each in the order found; the rest counted as omitted', () => {
    const dir = manifestDir({
      'p.yaml': [
        'kind: Policy\nname: warn-root\nmatch:\n  kinds: [HTTPSEdgeRoute]\nrules:\n  - expression: object.match == "/"\n    message: w\n    severity: warn\n',
        'kind: Policy\nname: deny-root\nmatch:\n  kinds: [HTTPSEdgeRoute]\nrules:\n  - expression: object.match == "/"\n    message: d\n',
        'kind: Policy\nname: deny-x\nmatch:\n  kinds: [HTTPSEdgeRoute]\nrules:\n  - expression: object.match != "/x"\n    message: x\n',
      ].join('---\n'),
    });
    const desired = [...Array.from({ length: 600 }, (_, i) => route(`a${i}`, { match: `/a${i}` })), ...Array.from({ length: 300 }, (_, i) => route(`x${i}`, { match: '/x' }))];
    const p = checkPlan(loadPolicyFiles([`${dir}/p.yaml`]).set, { plan: NO_STEPS, desired, observed: [], overrides: [{ policy: 'deny-x', reason: 'r' }] });
    expect(p.outcomes).toEqual([
      { policy: 'deny-root', denied: 900, warned: 0, overridable: true },
      { policy: 'deny-x', denied: 300, warned: 0, overridable: true, override: { reason: 'r' } },
      { policy: 'warn-root', denied: 0, warned: 900, overridable: true },
    ]);
    expect(p.results).toHaveLength(1000);
    expect(p.results.slice(0, 900).every((r) => r.policy === 'deny-root' && !r.overridden)).toBe(true);
    expect(p.results.slice(900).every((r) => r.policy === 'deny-x' && r.overridden)).toBe(true);
    expect(p.results[0]).toEqual({ policy: 'deny-root', rule: 0, severity: 'deny', message: 'd', identity: 'HTTPSEdge/shop/routes/a0', action: 'none' });
    expect(p.results[900]).toEqual({ policy: 'deny-x', rule: 0, severity: 'deny', message: 'x', identity: 'HTTPSEdge/shop/routes/x0', action: 'none', overridden: true });
    expect(p.omitted).toBe(1100); // 900 + 300 + 900 failures
  });
});
