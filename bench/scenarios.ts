import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One request, repeated by the load generator for the whole run. */
export interface LoadSpec {
  method: Method;
  /** Path and query on the service, e.g. `/certificate_authorities/ca_…`. */
  path: string;
  body?: unknown;
  /** The status every response must have; checked once before the run, and non-2xx are counted. */
  status: number;
  /** Each request gets a fresh value for every `[<id>]` in the body (autocannon `-I`): for unique fields. */
  uniqueIds?: boolean;
  /** Headers besides the account's key and version (`If-Match`, `Prefer`). */
  headers?: Record<string, string>;
}

/**
 * What a scenario measures, for the summary: `get` rows are held to the target (≥ 75 % of the
 * bare primary-key select on the same engine, unless the row says otherwise).
 */
export type ScenarioOp = 'get' | 'list' | 'create' | 'update' | 'delete';

export interface Scenario {
  name: string;
  op: ScenarioOp;
  /**
   * `false` exempts a `get` row from the 75 % target: when the response needs more than one query
   * (embedded children), the one-select baseline is not its floor.
   */
  heldToTarget?: boolean;
  /** The target (% of the bare select) per engine, where it is not the default 75 %. */
  targetPct?: { pglite?: number; postgres?: number };
  /**
   * Rows with the same `pair` are compared: req/s of the `small` one over the `large` one's, held
   * to at most `maxRatio`: the same request in a larger account, or with an extension that costs
   * something (`If-Match`, `Prefer: etags`), must not be slower by more than that.
   */
  pair?: { name: string; role: 'small' | 'large'; maxRatio: number };
  /** Seeds what the request needs through the API, in an account of its own; returns the request. */
  setup(api: SeedClient): Promise<LoadSpec>;
}

/** The service's API as one account sees it, for seeding; any unexpected status throws. */
export interface SeedClient {
  post(path: string, body: unknown, status?: number): Promise<any>;
  put(path: string, body: unknown, status?: number): Promise<any>;
  get(path: string, status?: number): Promise<any>;
}

const CERTS = new URL('../test/fixtures/certs/', import.meta.url);
export const RSA_CA = readFileSync(new URL('rsa-ca.pem', CERTS), 'utf8');
export const EC_CA = readFileSync(new URL('ec-ca.pem', CERTS), 'utf8');

/** Ids of backends this service does not store (HTTP backends): kept as given, not looked up. */
const HTTP_BACKENDS = ['bkdhr_2Q1hKmBmXyQGvLRzmPu0dnEmVTa', 'bkdhr_2Q1hKmBmXyQGvLRzmPu0dnEmVTb'];

/** Enough objects that a list returns a full page of 100 and has a next page. */
const LIST_SIZE = 120;

async function seedMany(n: number, make: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < n; i++) await make(i);
}

/** 20 edges of 5 routes each, listed in one page (with `headers` beside the key and version). */
async function twentyEdges(api: SeedClient, headers?: Record<string, string>): Promise<LoadSpec> {
  await seedMany(20, () => newEdgeWithRoutes(api));
  return { method: 'GET', path: '/edges/https?limit=100', status: 200, ...(headers ? { headers } : {}) };
}

export const newCa = (api: SeedClient, i = 0) =>
  api.post('/certificate_authorities', { description: `bench CA ${i}`, metadata: '{"team":"bench"}', ca_pem: i % 2 ? EC_CA : RSA_CA });

export const newFailover = (api: SeedClient, i = 0, backends: string[] = HTTP_BACKENDS) =>
  api.post('/backends/failover', { description: `bench failover ${i}`, metadata: '{"team":"bench"}', backends });

/** Hostports are unique service-wide: every seeded edge gets its own host. */
const hostport = () => `bench-${randomBytes(6).toString('hex')}.example.com:443`;

/** Runs `make(0..n-1)`, `width` at a time (seeding thousands of objects one by one is slow). */
async function seedParallel(n: number, width: number, make: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await make(next++);
  }));
}

/** Edges of 5 plain routes each, beside the one a row reads: an account with many routes. */
async function seedEdgesWithPlainRoutes(api: SeedClient, edges: number): Promise<void> {
  await seedParallel(edges, 8, async () => {
    const edge = await api.post('/edges/https', { description: 'bench filler', hostports: [hostport()] });
    for (let i = 0; i < 5; i++) await api.post(`/edges/https/${edge.id}/routes`, { match_type: 'path_prefix', match: `/f${i}`, description: `filler ${i}` });
  });
}

/** An edge as configured in practice: TLS, mutual TLS with a CA, 5 routes with modules and a backend. */
export async function newEdgeWithRoutes(api: SeedClient): Promise<{ id: string }> {
  const ca = await newCa(api);
  const backend = await newFailover(api);
  const edge = await api.post('/edges/https', {
    description: 'bench edge', metadata: '{"team":"bench"}', hostports: [hostport()],
    tls_termination: { min_version: '1.2' }, mutual_tls: { certificate_authority_ids: [ca.id] },
  });
  for (let i = 0; i < 5; i++) {
    await api.post(`/edges/https/${edge.id}/routes`, {
      match_type: 'path_prefix', match: `/app${i}`, description: `route ${i}`,
      backend: { backend_id: backend.id }, compression: {}, websocket_tcp_converter: {},
    });
  }
  return edge;
}

/**
 * ─── Extension point ───────────────────────────────────────────────────────────────────────────
 * Every row is measured on every engine, in this order, beside the two baselines. A new kind is
 * benchmarked by adding rows here: seed what the request needs in `setup`, return the request.
 * Keep reads before writes so creates do not grow the objects the reads look at.
 */
export const SCENARIOS: Scenario[] = [
  {
    name: 'GET certificate authority by id',
    op: 'get',
    async setup(api) {
      const ca = await newCa(api);
      return { method: 'GET', path: `/certificate_authorities/${ca.id}`, status: 200 };
    },
  },
  {
    name: 'GET failover backend by id',
    op: 'get',
    async setup(api) {
      const fo = await newFailover(api);
      return { method: 'GET', path: `/backends/failover/${fo.id}`, status: 200 };
    },
  },
  {
    name: 'GET HTTPS edge by id (5 routes, modules)',
    op: 'get',
    // One query (the edge and its routes); PGlite answers it on the server's own thread.
    targetPct: { postgres: 75, pglite: 60 },
    async setup(api) {
      const edge = await newEdgeWithRoutes(api);
      return { method: 'GET', path: `/edges/https/${edge.id}`, status: 200 };
    },
  },
  {
    name: 'GET HTTPS edge by id, account of 50 routes',
    op: 'get',
    heldToTarget: false, // held to the ratio with the next row
    pair: { name: 'GET HTTPS edge, account of 2,000 routes vs 50', role: 'small', maxRatio: 1.2 },
    async setup(api) {
      const edge = await newEdgeWithRoutes(api);
      await seedEdgesWithPlainRoutes(api, 9);
      return { method: 'GET', path: `/edges/https/${edge.id}`, status: 200 };
    },
  },
  {
    name: 'GET HTTPS edge by id, account of 2,000 routes',
    op: 'get',
    heldToTarget: false,
    pair: { name: 'GET HTTPS edge, account of 2,000 routes vs 50', role: 'large', maxRatio: 1.2 },
    async setup(api) {
      const edge = await newEdgeWithRoutes(api);
      await seedEdgesWithPlainRoutes(api, 399);
      return { method: 'GET', path: `/edges/https/${edge.id}`, status: 200 };
    },
  },
  {
    name: `list certificate authorities (100 of ${LIST_SIZE})`,
    op: 'list',
    async setup(api) {
      await seedMany(LIST_SIZE, (i) => newCa(api, i));
      return { method: 'GET', path: '/certificate_authorities?limit=100', status: 200 };
    },
  },
  {
    name: `list failover backends (100 of ${LIST_SIZE})`,
    op: 'list',
    async setup(api) {
      await seedMany(LIST_SIZE, (i) => newFailover(api, i));
      return { method: 'GET', path: '/backends/failover?limit=100', status: 200 };
    },
  },
  {
    name: 'list HTTPS edges (20 × 5 routes)',
    op: 'list',
    setup: (api) => twentyEdges(api),
  },
  // The team-safe extensions' cost (docs/api.md), each against the same request without it.
  {
    name: 'team-safe: list HTTPS edges (20 × 5 routes), no ETags',
    op: 'list',
    pair: { name: 'list HTTPS edges, Prefer: etags vs none', role: 'small', maxRatio: 1.25 },
    setup: (api) => twentyEdges(api),
  },
  {
    name: 'team-safe: list HTTPS edges (20 × 5 routes), Prefer: etags (120 ETags)',
    op: 'list',
    pair: { name: 'list HTTPS edges, Prefer: etags vs none', role: 'large', maxRatio: 1.25 },
    setup: (api) => twentyEdges(api, { prefer: 'etags' }),
  },
  {
    // What a route's PATCH below is read against (a write's cost in reads).
    name: 'team-safe: GET route',
    op: 'get',
    heldToTarget: false,
    async setup(api) {
      const edge = await newEdgeWithRoutes(api);
      const { routes } = await api.get(`/edges/https/${edge.id}`);
      return { method: 'GET', path: `/edges/https/${edge.id}/routes/${routes[0].id}`, status: 200 };
    },
  },
  {
    name: 'team-safe: PATCH route (raises its edge\'s version), no If-Match',
    op: 'update',
    pair: { name: 'PATCH route, If-Match vs none', role: 'small', maxRatio: 1.25 },
    async setup(api) {
      const edge = await newEdgeWithRoutes(api);
      const { routes } = await api.get(`/edges/https/${edge.id}`);
      return { method: 'PATCH', path: `/edges/https/${edge.id}/routes/${routes[0].id}`, status: 200, body: { description: 'patched' } };
    },
  },
  {
    // `*`: any current version (a fixed tag would be stale after the first write); the version is
    // read and compared under the row lock all the same.
    name: 'team-safe: PATCH route (raises its edge\'s version), If-Match',
    op: 'update',
    pair: { name: 'PATCH route, If-Match vs none', role: 'large', maxRatio: 1.25 },
    async setup(api) {
      const edge = await newEdgeWithRoutes(api);
      const { routes } = await api.get(`/edges/https/${edge.id}`);
      return { method: 'PATCH', path: `/edges/https/${edge.id}/routes/${routes[0].id}`, status: 200, body: { description: 'patched' }, headers: { 'if-match': '*' } };
    },
  },
  {
    name: 'create failover backend (2 HTTP children)',
    op: 'create',
    async setup() {
      return { method: 'POST', path: '/backends/failover', body: { description: 'bench', metadata: '{"team":"bench"}', backends: HTTP_BACKENDS }, status: 201 };
    },
  },
  {
    name: 'create failover backend (failover child: ref + cycle check)',
    op: 'create',
    async setup(api) {
      const child = await newFailover(api);
      return { method: 'POST', path: '/backends/failover', body: { description: 'bench', backends: [child.id, HTTP_BACKENDS[0]] }, status: 201 };
    },
  },
  {
    name: 'create certificate authority (RSA PEM)',
    op: 'create',
    async setup() {
      return { method: 'POST', path: '/certificate_authorities', body: { description: 'bench', ca_pem: RSA_CA }, status: 201 };
    },
  },
  {
    name: 'create HTTPS edge (TLS + mutual TLS)',
    op: 'create',
    async setup(api) {
      const ca = await newCa(api);
      return {
        method: 'POST', path: '/edges/https', status: 201,
        body: { description: 'bench', tls_termination: { min_version: '1.2' }, mutual_tls: { certificate_authority_ids: [ca.id] } },
      };
    },
  },
  {
    name: 'create route (backend + compression)',
    op: 'create',
    async setup(api) {
      const edge = await api.post('/edges/https', { description: 'bench', hostports: [hostport()] });
      const backend = await newFailover(api);
      return {
        method: 'POST', path: `/edges/https/${edge.id}/routes`, status: 201, uniqueIds: true,
        body: { match_type: 'path_prefix', match: '/r/[<id>]', backend: { backend_id: backend.id }, compression: {} },
      };
    },
  },
];
