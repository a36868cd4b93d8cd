import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeId, hostport, IDP_METADATA, newCa, newEdge, newFailover, newRoute } from '../helpers/edges.js';
import { ENGINES, startTestService, type TestService } from '../helpers/service.js';

/**
 * Random and mutated JSON bodies against every write endpoint of edges, routes and their modules:
 * never a 5xx, every 4xx with the full error body, no secret in any success. Requests go through
 * `app.inject` (the whole fastify pipeline, no socket) so the default run stays fast.
 * EDGEPLANE_FUZZ_RUNS (requests in total, default 1500: seconds; 10000 and more for a long run; shared by the engines under test) and
 * EDGEPLANE_FUZZ_SEED (fast-check prints the seed of a failing run) reproduce a run.
 */
const TOTAL = Number(process.env.EDGEPLANE_FUZZ_RUNS ?? 1_500);
const RUNS = Math.ceil(TOTAL / ENGINES.length);
const SEED = process.env.EDGEPLANE_FUZZ_SEED ? Number(process.env.EDGEPLANE_FUZZ_SEED) : undefined;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const interestingString = fc.constantFrom(
  '', ' ', 'edge', 'upstream', '1.2', '1.3', 'sns', 'SNS', 'github', 'GitHub', 'google', '/', '/a b', 'exact_path', 'path_prefix',
  'example.com:443', '*.example.com:443', 'EXAMPLE.com:443', 'a..b:443', '__proto__', 'constructor', 'toString', '\u0000', '\r\n',
  'ＡＢＣ', '👩‍👩‍👧', '\uD800', '<x/>', '<!DOCTYPE x>', 'org/team', 'a@b.co', 'https://id.example.com', 'x'.repeat(300),
  fakeId('ca'), fakeId('bkdfo'), fakeId('ipp'), fakeId('edghts'), fakeId('bkdhr'),
);
const hugeString = fc.integer({ min: 5_000, max: 100_000 }).map((n) => 'é'.repeat(n));
const leaf: fc.Arbitrary<Json> = fc.oneof(
  fc.constant(null), fc.boolean(), fc.integer(), fc.integer({ min: -1, max: 300 }), fc.double(),
  fc.constantFrom(0, -0, 0.5, 1.5, 2 ** 32, 2 ** 53 + 1, -1e308, 1e-7),
  fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), interestingString,
);
const { json } = fc.letrec<{ json: Json }>((tie) => ({
  json: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, fc.array(tie('json'), { maxLength: 4 }), fc.dictionary(fc.oneof(fc.string(), interestingString), tie('json'), { maxKeys: 4 })),
}));
// Deep nesting is written as text: JSON.stringify of a deep value is quadratic in V8.
const deep = fc.tuple(fc.integer({ min: 50, max: 5000 }), fc.boolean(), fc.boolean()).map(([n, arr, top]) =>
  (top ? '' : '{"description":') + (arr ? '['.repeat(n) + '1' + ']'.repeat(n) : '{"a":'.repeat(n) + '1' + '}'.repeat(n)) + (top ? '' : '}'),
);
/** A whole request body, as the text sent. */
const anyPayload = fc.oneof(
  { arbitrary: json.map((v) => JSON.stringify(v)), weight: 4 },
  { arbitrary: fc.dictionary(fc.oneof(fc.string(), interestingString), json, { maxKeys: 8 }).map((v) => JSON.stringify(v)), weight: 4 },
  { arbitrary: deep, weight: 1 },
  { arbitrary: hugeString.map((v) => JSON.stringify({ description: v })), weight: 1 },
);

/** Every path (object keys, array indices) inside a value. */
function paths(v: Json, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [];
  if (v && typeof v === 'object') {
    for (const [k, child] of Object.entries(v)) {
      const p = [...prefix, Array.isArray(v) ? Number(k) : k];
      out.push(p, ...paths(child as Json, p));
    }
  }
  return out;
}

type Mutation = { kind: 'set' | 'delete' | 'add'; at: number; value: Json; key: string };

/** A valid body with one spot changed: reaches the rules past the schema (normalisers, references). */
function mutate(template: Json, m: Mutation): Json {
  const body = structuredClone(template) as Record<string, Json>;
  const all = paths(body);
  if (all.length === 0) return m.value;
  const path = all[m.at % all.length];
  let holder: any = body;
  for (const step of path.slice(0, -1)) holder = holder[step];
  const last = path.at(-1)!;
  if (m.kind === 'set') holder[last] = m.value;
  else if (m.kind === 'delete') Array.isArray(holder) ? holder.splice(Number(last), 1) : delete holder[last];
  else if (holder[last] && typeof holder[last] === 'object' && !Array.isArray(holder[last])) holder[last][m.key] = m.value;
  else holder[last] = m.value;
  return body;
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom('set', 'delete', 'add') as fc.Arbitrary<Mutation['kind']>,
  at: fc.nat(),
  value: fc.oneof({ arbitrary: json, weight: 9 }, { arbitrary: hugeString, weight: 1 }),
  key: fc.oneof(fc.string(), interestingString),
});

describe.each(ENGINES)('fuzzing the edge and route write endpoints (%s)', (engine) => {
  let svc: TestService;
  let key: string;
  let targets: { method: 'POST' | 'PATCH' | 'PUT'; url: string; template: () => Json }[] = [];

  beforeAll(async () => {
    svc = await startTestService(engine);
    const c = await svc.account();
    key = c.apiKey!;
    const ca = (await newCa(c)).id;
    const fo = (await newFailover(c)).id;
    const edge = (await newEdge(c)).id;
    const modules: Record<string, Json> = {
      backend: { enabled: true, backend_id: fo },
      ip_restriction: { ip_policy_ids: [fakeId('ipp')] },
      circuit_breaker: { tripped_duration: 5, rolling_window: 5, num_buckets: 5, volume_threshold: 5, error_threshold_percentage: 0.5 },
      compression: { enabled: false },
      request_headers: { add: { 'x-a': 'b' }, remove: ['x-c'] },
      response_headers: { add: { 'x-a': 'b' }, remove: ['x-c'] },
      webhook_verification: { provider: 'github', secret: 'fuzz-SECRET' },
      oauth: { options_passthrough: true, cookie_prefix: 'a.b', inactivity_timeout: 5, maximum_duration: 5, auth_check_interval: 5, provider: { github: { client_id: 'id', client_secret: 'fuzz-SECRET', scopes: ['a'], email_addresses: ['a@b.co'], email_domains: ['b.co'], teams: ['a/b'], organizations: ['a'] } } },
      saml: { idp_metadata: IDP_METADATA, force_authn: true, allow_idp_initiated: false, authorized_groups: ['g'], nameid_format: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient' },
      oidc: { issuer: 'https://id.example.com', client_id: 'c', client_secret: 'fuzz-SECRET', scopes: ['openid'] },
      websocket_tcp_converter: { enabled: true },
    };
    const edgeBody = () => ({ description: 'd', metadata: 'm', hostports: [hostport()], mutual_tls: { certificate_authority_ids: [ca] }, tls_termination: { min_version: '1.3' } });
    // SAML is left out of route bodies: each new SAML module generates a key pair (its own PUT target below keeps one).
    const { saml: _saml, oidc: _oidc, ...routeModules } = modules;
    const routeBody = () => ({ match_type: 'path_prefix', match: '/' + Math.random().toString(36).slice(2), description: 'd', metadata: 'm', ...routeModules });
    const e = `/edges/https/${edge}`;
    const patchedRoute = (await newRoute(c, edge)).id;
    targets = [
      { method: 'POST', url: '/edges/https', template: edgeBody },
      { method: 'PATCH', url: e, template: edgeBody },
      { method: 'PUT', url: `${e}/mutual_tls`, template: () => ({ enabled: true, certificate_authority_ids: [ca] }) },
      { method: 'PUT', url: `${e}/tls_termination`, template: () => ({ enabled: true, min_version: '1.2' }) },
      { method: 'POST', url: `${e}/routes`, template: routeBody },
      { method: 'PATCH', url: `${e}/routes/${patchedRoute}`, template: routeBody },
    ];
    for (const [name, body] of Object.entries(modules)) {
      const route = (await newRoute(c, edge)).id;
      targets.push({ method: 'PUT', url: `${e}/routes/${route}/${name}`, template: () => body });
    }
  }, 60_000);
  afterAll(async () => { await svc?.close(); });

  it(`answers ${RUNS} random and mutated bodies with 2xx or a complete 4xx, never a 5xx`, async () => {
    const seen: Record<number, number> = {};
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.oneof(anyPayload.map((raw) => ({ raw })), mutation.map((m) => ({ m }))), async (which, gen) => {
        const t = targets[which % targets.length];
        const payload = 'raw' in gen ? gen.raw : JSON.stringify(mutate(t.template(), gen.m));
        const res = await svc.app.inject({
          method: t.method,
          url: t.url,
          headers: { 'service-version': '2', authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          payload,
        });
        seen[res.statusCode] = (seen[res.statusCode] ?? 0) + 1;
        const parsed = JSON.parse(res.body);
        if (res.statusCode >= 500) throw new Error(`${t.method} ${t.url} → ${res.statusCode} ${res.body} for ${payload.slice(0, 2000)}`);
        if (res.statusCode >= 400) {
          expect(parsed).toEqual({
            error_code: expect.stringMatching(/^ERR_[A-Z_]+$/), status_code: res.statusCode, msg: expect.any(String),
            details: { operation_id: expect.stringMatching(/^op_/) },
          });
          expect(parsed.msg.length).toBeGreaterThan(0);
          expect(res.headers['operation-id']).toBe(parsed.details.operation_id);
        } else {
          expect(res.body).not.toContain('fuzz-SECRET');
          expect(res.body).not.toContain('PRIVATE KEY');
        }
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: false },
    );
    // The run must have reached past the schema: some writes succeeded, most were refused.
    expect((seen[200] ?? 0) + (seen[201] ?? 0)).toBeGreaterThan(RUNS / 100);
    process.stderr.write(`fuzz statuses: ${JSON.stringify(seen)}\n`);
    expect(seen[400]).toBeGreaterThan(0);
  }, 600_000);
});
