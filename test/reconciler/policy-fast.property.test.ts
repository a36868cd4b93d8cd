import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { findKind } from '../../src/kinds/registry.js';
import { compile, isCompileError, type Compiled } from '../../src/reconciler/policy/cel.js';
import { checkPlan, clearPolicyCaches, Subject } from '../../src/reconciler/policy/evaluate.js';
import type { Body } from '../../src/kinds/types.js';
import { BAIL } from '../../src/reconciler/policy/fast.js';
import { loadPolicyFiles } from '../../src/reconciler/policy/load.js';
import type { DesiredObject } from '../../src/reconciler/plan/state.js';
import type { Plan } from '../../src/reconciler/plan/types.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';

afterAll(() => cleanupDirs());

const STARTER = join(import.meta.dirname, '..', '..', 'examples', 'policies');
const starterFiles = readdirSync(STARTER).filter((f) => f.endsWith('.yaml')).map((f) => join(STARTER, f));

/** The bench's five policies beyond the starter set (bench/policy-files.ts). */
const BENCH = [
  'has(object.description) || object.match == "/"',
  'has(object.backend) && object.backend.backend_id != ""',
  'has(object.description) && size(object.description) <= 200',
  'object.hostports.all(h, h.endsWith(":443"))',
  '!has(object.mutual_tls) || size(object.mutual_tls.certificate_authority_ids) <= 4',
];

/** Values the closures leave to the library (doubles compared, lists compared or searched for an int). */
const LIBRARY_ONLY = ['object.a <= 2.5', 'object.a in [1, 2]', 'object.a == [1, 2]', 'object.a == 0.5'];

/** Each construct the closures cover, on values of the right types and of wrong ones. */
const CONSTRUCTS = [
  'object.a', 'object.a.b', 'object.a.b.c == "x"', 'has(object.a)', 'has(object.a.b)', 'has(object.a.b.c)',
  '!object.a', '!has(object.a) || object.a', 'object.a && object.b', 'object.a || object.b', 'object.a || true', 'object.a && false',
  '(object.a || object.b) && !(object.c && object.d)', 'object.a ? object.b : object.c',
  'object.a == object.b', 'object.a != object.b', 'object.a == "x"', 'object.a == null', 'object.a != 1', 'object.a == true',
  'object.a < object.b', 'object.a <= 3', 'object.a > object.b', 'object.a >= -1', 'object.a <= 2.5',
  'object.a in ["x", "y", "é"]', 'object.a in object.b', '"x" in object.a', 'object.a in [1, 2]',
  'size(object.a)', 'size(object.a) <= 2', 'object.a.size() == 1', 'size(object.a.b) > 0',
  'object.a.startsWith("x")', 'object.a.endsWith(object.b)', 'object.a.contains("é")', 'object.a.b.startsWith("*.")',
  'object.a.all(x, x.startsWith("x"))', 'object.a.exists(x, x == object.b)', 'object.a.all(x, x)', 'object.a.exists(x, x)',
  'object.a.all(x, object.b.exists(y, y == x))', 'object.a.all(object, object != "x")', 'object.a.exists(x, x.b == 1)',
  'action == "create" && "a" in changes', 'live == null || live.a == object.a', 'has(live.a)', 'object.a == [1, 2]',
  'object.a.all(x, has(x.b))', 'object.a.b || object.a.c', 'size(object.a) == size(object.b)', 'object.a.size() > 1',
  ...LIBRARY_ONLY,
];

const KEYS = ['a', 'b', 'c', 'd', 'kind', 'name', 'description', 'match', 'backend', 'backend_id', 'hostports', 'mutual_tls', 'certificate_authority_ids', 'tls_termination', 'min_version', 'circuit_breaker', 'oauth', 'oidc', 'saml', 'ip_restriction'];
const string = fc.constantFrom('x', 'y', '', 'é', '*.', '😀', 'x😀', 'a\uD800', '\uDC00\uD800x', '\uD83D\uDE00\uD83D', '/admin', '/', ':443', 'a.example.com:443', '*.example.com:443', '1.2', '1.0', 'FailoverBackend/p', 'bkdfo_1', 'b');
const { value } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true },
    { arbitrary: string, weight: 4 },
    { arbitrary: fc.bigInt({ min: -3n, max: 5n }), weight: 3 },
    { arbitrary: fc.boolean(), weight: 3 },
    { arbitrary: fc.constantFrom(null, 0.5, 2.5, 1, -0, Number.NaN), weight: 1 },
    { arbitrary: fc.array(string, { maxLength: 3 }), weight: 2 },
    { arbitrary: fc.array(tie('value'), { maxLength: 3 }), weight: 1 },
    { arbitrary: fc.record({ a: tie('value'), b: tie('value'), c: tie('value') }, { requiredKeys: [] }), weight: 2 },
    { arbitrary: fc.dictionary(fc.constantFrom(...KEYS), tie('value'), { maxKeys: 4 }), weight: 1 }),
}));
/** An object: the fields the constructs read (a–d) often there, then any of the policies' fields. */
const object = fc.tuple(fc.record({ a: value, b: value, c: value, d: value }, { requiredKeys: [] }), fc.dictionary(fc.constantFrom(...KEYS.slice(4)), value, { maxKeys: 6 })).map(([x, y]) => ({ ...y, ...x }));
const activation = fc.record({
  object,
  live: fc.oneof(fc.constant(null), object),
  action: fc.constantFrom('create', 'update', 'replace', 'delete', 'none'),
  changes: fc.array(fc.constantFrom('a', 'b', 'hostports'), { maxLength: 3 }),
  plan: fc.constant({}),
});

function compiled(text: string): Compiled {
  const c = compile(text, 'bool');
  // Compiled as `bool`: an expression of another type is compiled here as the library compiles it.
  if (isCompileError(c)) throw new Error(`${text}: ${c.message}`);
  return c;
}

/** The library's verdict: its value, or the summary of its error. */
function library(c: Compiled, vars: Record<string, unknown>): { value: unknown } | { error: string } {
  try {
    return { value: c.run(vars) };
  } catch (err) {
    return { error: (err as { summary?: string }).summary ?? String(err) };
  }
}

/** The expressions of the starter policies (conditions and rules), as written. */
function starterTexts(): string[] {
  return starterFiles.flatMap((f) => {
    const doc = parse(readFileSync(f, 'utf8')) as { match?: { condition?: string }; rules: { expression: string }[] };
    return [...(doc.match?.condition ? [doc.match.condition] : []), ...doc.rules.map((r) => r.expression)];
  });
}

describe('CEL as closures (fast.ts) give what the library gives', () => {
  const BOOL_ONLY = (t: string) => !isCompileError(compile(t, 'bool'));
  const texts = [...new Set([...BENCH, ...CONSTRUCTS.filter(BOOL_ONLY)])];

  it('every expression of the starter policies and of the bench is compiled to closures (but a rule over the plan)', () => {
    const set = loadPolicyFiles(starterFiles).set;
    expect(set.policies.length).toBeGreaterThanOrEqual(5);
    for (const p of set.policies) {
      for (const c of [...(p.condition ? [p.condition] : []), ...p.rules.map((r) => r.compiled)]) expect(Boolean(c.fast), p.name).toBe(!p.planLevel);
    }
    for (const t of BENCH) expect(compiled(t).fast, t).toBeDefined();
  });

  it('on random objects: the same value, or BAIL (the library then says), never a value where the library errs', () => {
    const exprs = [...texts, ...starterTexts()].map((t) => [t, compiled(t)] as const).filter(([, c]) => c.fast);
    expect(exprs.length).toBeGreaterThan(50);
    const decided = new Map<string, number>(exprs.map(([t]) => [t, 0]));
    fc.assert(fc.property(activation, (vars) => {
      for (const [text, c] of exprs) {
        const fast = c.fast!(vars);
        if (fast === BAIL) continue;
        decided.set(text, decided.get(text)! + 1);
        expect({ text, ...library(c, vars) }).toEqual({ text, value: fast });
      }
    }), { numRuns: 1000 });
    // The object read field by field from the check's subject (no view made), as JSON (whole numbers become ints).
    fc.assert(fc.property(activation, fc.constantFrom('httpsEdge', 'httpsEdgeRoute'), (vars, kind) => {
      const body = JSON.parse(JSON.stringify(vars.object, (_, x) => (typeof x === 'bigint' ? Number(x) : x))) as Body;
      const def = findKind(kind)!;
      const view = new Subject(def, 'o', `${kind}/o`, body).object();
      for (const [text, c] of exprs) {
        const fast = c.fast!({ ...vars, object: {} }, new Subject(def, 'o', `${kind}/o`, body));
        if (fast !== BAIL) expect({ text, ...library(c, { ...vars, object: view }) }).toEqual({ text, value: fast });
      }
    }), { numRuns: 500 });
    // Each expression was decided by the closures on some objects (compared, not only left to the library).
    expect([...decided].filter(([t, n]) => n === 0 && !LIBRARY_ONLY.includes(t)).map(([t]) => t)).toEqual([]);
    expect(LIBRARY_ONLY.map((t) => decided.get(t))).toEqual(LIBRARY_ONLY.map(() => 0));
  });

  it('a plan checked with the closures has the results it has without them', () => {
    const ROUTE = findKind('httpsEdgeRoute')!;
    const EDGE = findKind('httpsEdge')!;
    const dir = manifestDir(Object.fromEntries(BENCH.map((e, i) => [`b${i}.yaml`, `kind: Policy\nname: b${i}\nmatch:\n  kinds: [${e.includes('match') || e.includes('backend') ? 'HTTPSEdgeRoute' : 'HTTPSEdge'}]\nrules:\n  - expression: '${e}'\n    message: b${i}\n`])));
    const files = [...starterFiles, ...BENCH.map((_, i) => `${dir}/b${i}.yaml`)];
    const desiredOf = (bodies: Record<string, unknown>[]): DesiredObject[] => bodies.map((body, i) => {
      const kind = i % 2 ? ROUTE : EDGE;
      return { kind, identity: `${kind.manifestKind}/o${i}`, name: `o${i}`, body: body as DesiredObject['body'], protect: false, fp: {} };
    });
    const check = (desired: DesiredObject[], closures: boolean) => {
      clearPolicyCaches();
      const set = loadPolicyFiles(files).set;
      if (!closures) for (const p of set.policies) for (const c of [...(p.condition ? [p.condition] : []), ...p.rules.map((r) => r.compiled)]) delete c.fast;
      return checkPlan(set, { plan: { steps: [] } as unknown as Plan, desired, observed: [] });
    };
    fc.assert(fc.property(fc.array(object, { minLength: 1, maxLength: 12 }), (bodies) => {
      const desired = desiredOf(bodies.map((b) => JSON.parse(JSON.stringify(b, (_, v) => (typeof v === 'bigint' ? Number(v) : v))) as Record<string, unknown>));
      expect(check(desired, true)).toEqual(check(desired, false));
    }), { numRuns: 60 });
    clearPolicyCaches();
  });
});
