import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { planFromState } from '../helpers/plan-lists.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';

afterAll(() => cleanupDirs());

describe('requests over the service\'s 1 MiB body limit', () => {
  it('are warned about by the plan, naming the step, though every field is within its own limit', async () => {
    const headers = (p: string) => Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`${p}-${String(i).padStart(3, '0')}-${'h'.repeat(246)}`, 'v'.repeat(4096)]));
    const route = (name: string, match: string, big: boolean) => ({
      name, match_type: 'path_prefix', match,
      ...(big ? {
        request_headers: { add: headers('x-req') },
        response_headers: { add: headers('x-res') },
        oauth: { provider: { google: { email_addresses: Array.from({ length: 1000 }, (_, i) => `u${String(i).padStart(4, '0')}-${'a'.repeat(55)}@${'d'.repeat(60)}.${'e'.repeat(60)}.${'f'.repeat(40)}.example.com`) } } },
      } : {}),
    });
    const edge = { kind: 'HTTPSEdge', name: 'web', hostports: ['example.com:443'], routes: [route('big', '/', true), route('small', '/s/', false)] };
    const root = manifestDir({ 'edge.yaml': stringify(edge, { lineWidth: 0 }) });
    const r = (await planFromState({ root, stack: 'limits', env: {} }, {}, 'https://api.example.test'));
    expect(r.problems.filter((p) => p.severity === 'error')).toEqual([]);
    const over = r.plan!.warnings.filter((w) => w.includes("over the service's 1 MiB limit"));
    expect(over).toHaveLength(1);
    expect(over[0]).toMatch(/^HTTPSEdge\/web\/routes\/big:create: its request body is about 1\d{3} KiB/);
  });
});

describe('children per parent', () => {
  it('an edge with more routes than the service holds is a validation error, not an apply that stops partway', async () => {
    const routes = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `r${i}`, match_type: 'path_prefix', match: `/r${i}/` }));
    const edge = (n: number) => stringify({ kind: 'HTTPSEdge', name: 'web', hostports: ['example.com:443'], routes: routes(n) }, { lineWidth: 0 });
    const over = (await planFromState({ root: manifestDir({ 'edge.yaml': edge(1001) }), stack: 'limits', env: {} }, {}, 'https://api.example.test'));
    expect(over.plan).toBeUndefined();
    expect(over.problems.filter((p) => p.severity === 'error').map((p) => [p.path, p.rule, p.message])).toEqual([
      ['routes', 'limit', 'an HTTPS edge holds at most 1000 HTTPS edge routes; this one has 1001, and the service refuses every one past 1000'],
    ]);
    const at = (await planFromState({ root: manifestDir({ 'edge.yaml': edge(1000) }), stack: 'limits', env: {} }, {}, 'https://api.example.test'));
    expect(at.problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(at.plan!.steps).toHaveLength(1001);
  });
});
