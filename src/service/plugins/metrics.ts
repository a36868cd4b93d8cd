import { createHash, timingSafeEqual } from 'node:crypto';
import fp from 'fastify-plugin';
import type { Counter, Registry } from 'prom-client';
import type { FastifyInstance } from 'fastify';
import type { RefusedConnections } from '../connections.js';
import type { AuthFailureLimit } from '../auth-failures.js';

/**
 * The app's metrics (prom-client). Labels hold only bounded, non-identifying values: the method,
 * the route *pattern* (`/edges/https/:id`, never the path with its ids), the status code, a job's
 * type and outcome. Account ids, keys, hostnames and bodies never appear.
 */
export interface ServiceMetrics {
  registry: Registry;
  jobOutcomes: Counter<'type' | 'outcome'>;
  /** Requests the rate limit let through uncounted: its Redis did not answer in time (`rate-limit.ts`). */
  rateLimitUncounted: Counter;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** null when metrics are switched off. */
    metrics: ServiceMetrics | null;
  }
  interface FastifyRequest { inFlight: boolean }
}

/** The route label of every refused request that had no valid key (method `ANY`, status `4xx`/`5xx`). */
export const UNAUTHENTICATED_ROUTE = 'unauthenticated';

/** How long a rendered scrape is served again: a scrape costs milliseconds of CPU, a flood of them must not starve the API. */
export const SCRAPE_CACHE_MS = 1000;

/** The route label of a request no route matched (404s, and paths fastify could not route). */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Process metrics (CPU, memory, event loop lag, GC) once per process: each collection starts an
 * event-loop-delay sampler that is never stopped, and tests build many apps in one process.
 */
let processRegistry: Registry | undefined;
async function processMetrics(): Promise<Registry> {
  if (!processRegistry) {
    const { collectDefaultMetrics, Registry } = await import('prom-client');
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export const metricsPlugin = fp<{ enabled: boolean; refusedConnections?: RefusedConnections; authFailures?: AuthFailureLimit }>(async (app, opts) => {
  if (!opts.enabled) {
    app.decorate('metrics', null);
    return;
  }
  // Loaded only when metrics are on (the embedded CLI service runs without).
  const { Counter, Gauge, Histogram, Registry } = await import('prom-client');
  const registry = new Registry();
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to the end of its response, by method, route pattern and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const inFlight = new Gauge({
    name: 'http_requests_in_flight',
    help: 'Requests received and not yet answered',
    registers: [registry],
  });
  const jobOutcomes = new Counter({
    name: 'edgeplane_jobs_finished_total',
    help: "Background jobs this process's worker ran, by type and outcome (done, failed: retried later, lost: another worker's lease)",
    labelNames: ['type', 'outcome'] as const,
    registers: [registry],
  });
  const rateLimitUncounted = new Counter({
    name: 'edgeplane_rate_limit_uncounted_total',
    help: "Requests let through without being counted because the rate limit's Redis did not answer in time (fail-open)",
    registers: [registry],
  });
  const refused = opts.refusedConnections;
  if (refused) {
    // Counted by the connection guards as plain numbers (a flood of refused connections costs no
    // label lookups), read at scrape time; every reason present from the start, at 0.
    new Counter({
      name: 'edgeplane_connections_refused_total',
      help: 'Connections closed as they arrived, by the cap they were over: per_address (connections from one address), headers (connections from one address with no request in flight: half-sent headers, TLS handshakes, idle), global (all connections, or the reserve for addresses holding few)',
      labelNames: ['reason'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const reason of ['per_address', 'headers', 'global'] as const) this.inc({ reason }, refused[reason]);
      },
    });
  }
  const authFailures = opts.authFailures;
  if (authFailures) {
    // Plain counts kept by the limit (`auth-failures.ts`), read at scrape time.
    new Counter({
      name: 'edgeplane_auth_failures_total', help: 'Requests whose API key or status page session was unknown or revoked (each cost a database look-up)', registers: [registry],
      collect() { this.reset(); this.inc(authFailures.failures); },
    });
    new Counter({
      name: 'edgeplane_auth_failures_refused_total', help: 'Requests refused with 429 ERR_AUTH_FAILURES, before any look-up: their address was past EDGEPLANE_AUTH_FAILURE_LIMIT', registers: [registry],
      collect() { this.reset(); this.inc(authFailures.refused); },
    });
  }
  const db = app.db;
  // Queue figures are read from the database at scrape time: the queue is shared by every replica.
  const queueGauge = (name: string, help: string, figure: 'count' | 'oldestAge') => new Gauge({
    name, help, labelNames: ['state'] as const, registers: [registry],
    async collect() {
      const stats = await jobQueueStats(app);
      this.reset();
      for (const state of ['queued', 'running'] as const) if (stats) this.set({ state }, stats[state][figure]);
    },
  });
  queueGauge('edgeplane_jobs_queue_depth', 'Background jobs not yet done (all replicas), by state: queued (waiting or backing off) or running', 'count');
  queueGauge('edgeplane_jobs_oldest_age_seconds', 'Age of the oldest background job not yet done, by state (0 when there is none)', 'oldestAge');
  if (db.poolStats) {
    const pool = db.poolStats.bind(db);
    new Gauge({
      name: 'edgeplane_db_pool_connections',
      help: 'Database pool connections by state: idle or in use',
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        const s = pool();
        this.set({ state: 'idle' }, s.idle);
        this.set({ state: 'in_use' }, s.total - s.idle);
      },
    });
    new Gauge({ name: 'edgeplane_db_pool_max_connections', help: 'Most connections the database pool opens', registers: [registry], collect() { this.set(pool().max); } });
    new Gauge({ name: 'edgeplane_db_pool_waiting_requests', help: 'Queries waiting for a pool connection', registers: [registry], collect() { this.set(pool().waiting); } });
  }
  await processMetrics();

  app.decorate('metrics', { registry, jobOutcomes, rateLimitUncounted });
  app.decorateRequest('inFlight', false);
  // Callback-style hooks (they run on every request): no promise each.
  app.addHook('onRequest', (req, _reply, next) => {
    inFlight.inc();
    req.inFlight = true;
    next();
  });
  const finished = (req: { inFlight: boolean }) => {
    if (!req.inFlight) return;
    req.inFlight = false;
    inFlight.dec();
  };
  app.addHook('onRequestAbort', (req, next) => {
    finished(req);
    next();
  });
  // One labelled child per method, route and status: prom-client hashes a labels object on every
  // observe, the child skips it.
  const byLabels = new Map<string, { observe(v: number): void }>();
  app.addHook('onResponse', (req, reply, next) => {
    finished(req);
    // A refused request without a valid key (any method, any path, any 4xx) is one label set per
    // status class: a stranger cannot add label sets (series every scrape renders).
    const refusedStranger = req.principal === undefined && reply.statusCode >= 400;
    const method = refusedStranger ? 'ANY' : req.method;
    const route = refusedStranger ? UNAUTHENTICATED_ROUTE : req.routeOptions.url ?? UNMATCHED_ROUTE;
    const status = refusedStranger ? `${Math.floor(reply.statusCode / 100)}xx` : String(reply.statusCode);
    const key = `${method} ${status} ${route}`;
    let child = byLabels.get(key);
    if (!child) byLabels.set(key, (child = duration.labels({ method, route, status_code: status })));
    child.observe(reply.elapsedTime / 1000);
    next();
  });
}, { name: 'edgeplane-metrics', dependencies: ['edgeplane-database'] });

/** The Prometheus text of the app's metrics and the process's (rendered at most once a second); null when metrics are off. */
export async function metricsText(app: FastifyInstance): Promise<{ contentType: string; text: string } | null> {
  if (!app.metrics) return null;
  const cached = scrapes.get(app);
  if (cached && Date.now() - cached.at < SCRAPE_CACHE_MS) return cached.text;
  const registry = app.metrics.registry;
  const text = Promise.all([registry.metrics(), processMetrics().then((r) => r.metrics())])
    .then(([own, proc]) => ({ contentType: registry.contentType, text: own + proc }));
  scrapes.set(app, { at: Date.now(), text });
  text.catch(() => scrapes.delete(app));
  return text;
}
const scrapes = new WeakMap<FastifyInstance, { at: number; text: Promise<{ contentType: string; text: string }> }>();

interface QueueStats { queued: { count: number; oldestAge: number }; running: { count: number; oldestAge: number } }

/** One query per scrape, shared by the queue gauges collected together; null: the database did not answer. */
const pendingStats = new WeakMap<FastifyInstance, Promise<QueueStats | null>>();
function jobQueueStats(app: FastifyInstance): Promise<QueueStats | null> {
  let p = pendingStats.get(app);
  if (!p) {
    p = readQueueStats(app).finally(() => pendingStats.delete(app));
    pendingStats.set(app, p);
  }
  return p;
}

async function readQueueStats(app: FastifyInstance): Promise<QueueStats | null> {
  const stats: QueueStats = { queued: { count: 0, oldestAge: 0 }, running: { count: 0, oldestAge: 0 } };
  // The database unreachable: the queue's samples are left out (unknown), the rest of the scrape is still useful.
  const { rows } = await app.db.query<{ state: 'queued' | 'running'; n: string | number; age: string | number | null }>(
    `SELECT state, count(*) AS n, extract(epoch FROM now() - min(created_at)) AS age
       FROM jobs WHERE state IN ('queued', 'running') GROUP BY state`,
  ).catch(() => ({ rows: null }));
  if (!rows) return null;
  for (const r of rows) stats[r.state] = { count: Number(r.n), oldestAge: Math.max(0, Number(r.age ?? 0)) };
  return stats;
}

/** Whether a scrape may read the metrics: always without a token; with one, `Authorization: Bearer <token>`. */
export function scrapeAllowed(token: string | undefined, authorization: string | undefined): boolean {
  if (!token) return true;
  const given = /^Bearer (.+)$/.exec(authorization ?? '')?.[1] ?? '';
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(given), digest(token));
}
