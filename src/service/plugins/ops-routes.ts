import fp from 'fastify-plugin';
import { pendingMigrations } from '../../store/migrate.js';
import { metricsText, scrapeAllowed } from './metrics.js';
import type { DegradedChecks } from '../health.js';

/** How long /readyz waits for the database before calling it unreachable. */
export const READY_TIMEOUT_MS = 2000;

const health = {
  type: 'object',
  properties: { status: { type: 'string', enum: ['ok'] } },
  required: ['status'],
  additionalProperties: false,
} as const;

const readiness = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ready', 'degraded', 'not_ready'] },
    engine: { type: 'string', enum: ['postgres', 'pglite'] },
    database: { type: 'string', description: 'The database target, password and credential parameters masked' },
    reason: { type: 'string', description: 'Why the replica is not ready, or what it runs without (not_ready and degraded only)' },
  },
  required: ['status', 'engine', 'database'],
  additionalProperties: false,
} as const;

/**
 * Routes for operators and their tools, outside the API scope: no version header, no key.
 * `/healthz`: the process is up (liveness). `/readyz`: the database answers and every migration
 * this version knows is applied (readiness; 503 with the reason otherwise; 200 `degraded` when a
 * dependency it can run without, the rate limit's Redis, does not answer). `/metrics`:
 * Prometheus text, unless metrics are off or served on a port of their own.
 */
export const opsRoutesPlugin = fp<{ metricsRoute: boolean; metricsToken?: string; health?: DegradedChecks }>(async (app, opts) => {
  app.get('/healthz', { schema: { operationId: 'getHealth', summary: 'Liveness: the process is up', tags: ['operations'], response: { 200: health } } }, async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    return { status: 'ok' };
  });

  app.get('/readyz', {
    schema: { operationId: 'getReadiness', summary: 'Readiness: the database answers and its migrations are current', tags: ['operations'], response: { 200: readiness, 503: readiness } },
  }, async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    const base = { engine: app.db.engine, database: app.db.describe };
    const reason = await notReadyReason(app.db);
    if (reason) return reply.code(503).send({ status: 'not_ready', ...base, reason });
    // Degraded (a stalled Redis): still 200, the replica serves; the reason says what it runs without.
    const degraded = (await opts.health?.reasons()) ?? [];
    if (degraded.length) return { status: 'degraded', ...base, reason: degraded.join('; ') };
    return { status: 'ready', ...base };
  });

  if (opts.metricsRoute && app.metrics) {
    app.get('/metrics', {
      schema: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics of this replica',
        tags: ['operations'],
        produces: ['text/plain'],
        response: {
          200: { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } },
          401: { description: 'EDGEPLANE_METRICS_TOKEN is set and the request does not carry it as a Bearer token', content: { 'text/plain': { schema: { type: 'string' } } } },
        },
      },
    }, async (req, reply) => {
      if (!scrapeAllowed(opts.metricsToken, req.headers.authorization)) {
        return reply.code(401).header('cache-control', 'no-store').type('text/plain; charset=utf-8').send('metrics need Authorization: Bearer <EDGEPLANE_METRICS_TOKEN>\n');
      }
      const m = (await metricsText(app))!;
      reply.header('cache-control', 'no-store').type(m.contentType);
      return m.text;
    });
  }
}, { name: 'edgeplane-ops-routes', dependencies: ['edgeplane-database', 'edgeplane-errors', 'edgeplane-metrics'] });

/** null when ready; otherwise what is wrong, for the operator. */
async function notReadyReason(db: Parameters<typeof pendingMigrations>[0]): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`the database did not answer within ${READY_TIMEOUT_MS} ms`), READY_TIMEOUT_MS);
  });
  const check = pendingMigrations(db).then(
    (pending) => (pending.length ? `migrations not applied: ${pending.join(', ')}` : null),
    (err: Error) => `the database is unreachable: ${err.message.slice(0, 300)}`,
  );
  try {
    return await Promise.race([check, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
