import { readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createSecureContext } from 'node:tls';
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../service/app.js';
import { unknownMigrations } from '../../store/migrate.js';
import { metricsText, scrapeAllowed } from '../../service/plugins/metrics.js';
import { ensureCredentials } from '../../embedded/embedded-credentials.js';
import { openEngine } from '../../embedded/engine.js';
import { databaseUrl } from '../../util/database-url.js';
import { keyRingFor, stateDirOf } from '../../embedded/state-dir.js';
import { stateDirFor, stdio } from '../output.js';
import { authFailureLimitFromEnv, idempotencyFromEnv, logLevelOf, rateLimitFromEnv, serverOptionsFromEnv, serviceOptionsFromEnv, workerOptionsFromEnv } from '../service-config.js';

export interface ServeFlags { port: string; host: string; state?: string; logLevel?: string; tlsCert?: string; tlsKey?: string; metrics?: string; metricsPort?: string; ui?: string }

function portNumber(flag: string, value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw new Error(`${flag}: ${value} is not a port number`);
  return port;
}

/** The certificate and key of `--tls-cert` / `--tls-key`, both or neither. */
function readTls(flags: ServeFlags): { cert: string; key: string } | undefined {
  if (!flags.tlsCert && !flags.tlsKey) return undefined;
  if (!flags.tlsCert || !flags.tlsKey) throw new Error('--tls-cert and --tls-key go together: give both, or neither for plain HTTP');
  const read = (flag: string, file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`${flag} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  const pair = { cert: read('--tls-cert', flags.tlsCert), key: read('--tls-key', flags.tlsKey) };
  // Said, not refused: secret stores mounted into containers are often 0644 by default.
  const mode = statSync(flags.tlsKey).mode & 0o777;
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
    stdio.error(`warning: --tls-key ${flags.tlsKey} is readable by other users (mode ${mode.toString(8).padStart(4, '0')}): make it readable by the service only (chmod 600)`);
  }
  // Checked here, each file on its own first: OpenSSL's own messages name neither the flag nor
  // the file ("PEM routines::no start line"), and the server would only fail once the database is open.
  const check = (what: string, options: { cert?: string; key?: string }) => {
    try {
      createSecureContext(options);
    } catch (err) {
      throw new Error(`${what} (${(err as Error).message})`);
    }
  };
  check(`--tls-cert ${flags.tlsCert}: not a PEM certificate chain`, { cert: pair.cert });
  check(`--tls-key ${flags.tlsKey}: not a PEM private key (an encrypted key is not supported)`, { key: pair.key });
  check(`--tls-key ${flags.tlsKey} is not the key of the certificate in --tls-cert ${flags.tlsCert}`, pair);
  return pair;
}

export async function serve(flags: ServeFlags): Promise<void> {
  // Every setting is read, and a bad one refused, before anything is opened.
  const service = serviceOptionsFromEnv();
  const logLevel = logLevelOf(flags.logLevel ?? process.env.EDGEPLANE_LOG_LEVEL);
  const { enabled: runJobs, ...workerOptions } = workerOptionsFromEnv();
  const { shutdownTimeoutMs, ...limits } = serverOptionsFromEnv();
  const rateLimit = rateLimitFromEnv();
  const authFailureLimit = authFailureLimitFromEnv();
  const idempotency = idempotencyFromEnv();
  const tls = readTls(flags);
  const port = portNumber('--port', flags.port);
  const metricsOff = flags.metrics === 'off';
  const metricsToken = process.env.EDGEPLANE_METRICS_TOKEN || undefined;
  const metricsPort = flags.metricsPort !== undefined && flags.metricsPort !== '' ? portNumber('--metrics-port', flags.metricsPort) : undefined;
  if (metricsOff && metricsPort !== undefined) throw new Error('--metrics-port: metrics are off (--metrics off / EDGEPLANE_METRICS=off)');
  // A key ring given is read (and refused) before anything is opened.
  if (process.env.EDGEPLANE_SECRETS_KEYS) keyRingFor('postgres', null);
  if (!databaseUrl()) await stateDirFor(stateDirOf({ stateDir: flags.state }), stdio);
  const db = await openEngine({ stateDir: flags.state });
  let app: FastifyInstance | undefined;
  let metricsServer: Server | undefined;
  try {
    // On the embedded database, the state directory's own account (as every CLI command makes
    // it): a `plan --state DIR` run beside this server reaches it through the lock's URL with that
    // key, even on a directory no command has opened yet (no `admin` can run while this holds it).
    if (db.engine === 'pglite') await ensureCredentials(db, stateDirOf({ stateDir: flags.state }));
    const secrets = keyRingFor(db.engine, stateDirOf({ stateDir: flags.state }));
    app = await buildApp({
      db, ...service, secrets, rateLimit, authFailureLimit, idempotency, server: { ...limits, tls },
      logLevel,
      // Every process runs a worker: the queue is in the database, so N replicas share the work.
      jobWorker: runJobs ? workerOptions : false,
      metrics: metricsOff ? 'off' : metricsPort !== undefined ? 'collect' : 'route',
      ui: flags.ui !== 'off',
      metricsToken,
    });
    await app.listen({ port, host: flags.host });
    if (metricsPort !== undefined) metricsServer = await serveMetrics(app, flags.host, metricsPort, limits, metricsToken);
  } catch (err) {
    // A port in use, an address not on this machine, a bad certificate: the process ends with the
    // error, the database closed and the state directory released (open, they would keep it running).
    metricsServer?.close();
    await app?.close();
    await db.close();
    throw err;
  }
  const addr = app.server.address();
  const actualPort = typeof addr === 'object' && addr ? addr.port : port;
  const hostPart = flags.host.includes(':') ? `[${flags.host}]` : flags.host;
  const url = `${tls ? 'https' : 'http'}://${hostPart}:${actualPort}`;
  db.lock?.setUrl(url);
  const metricsAddr = metricsServer?.address();
  const metricsUrl = metricsAddr && typeof metricsAddr === 'object' ? `http://${hostPart}:${metricsAddr.port}/metrics` : null;
  app.log.info(
    {
      url, engine: db.engine, database: db.describe, worker: app.jobWorker?.id ?? null,
      metrics: metricsOff ? null : metricsUrl ?? `${url}/metrics`,
      ui: flags.ui === 'off' ? null : `${url}/ui/`,
      rate_limit: rateLimit.perMinute, rate_limit_store: rateLimit.redisUrl ? 'redis' : 'process',
    },
    `edgeplane listening on ${url} (database ${db.describe})`,
  );
  if (!(await app.secrets.start()).sealer) app.log.warn('no key ring (EDGEPLANE_SECRETS_KEYS): secrets are stored in plain text; give one and restart to seal them (docs/operations.md, "Secrets at rest")');
  // Not awaited: the signal handlers below must be in place as soon as the server listens.
  const log = app.log;
  void unknownMigrations(db).then((newer) => {
    if (newer.length) log.warn({ migrations: newer }, `the database was migrated by a newer edgeplane (migration ${newer.join(', ')} is not this version's): this replica runs on, as in a rolling upgrade; replace it with the newer version`);
  }, () => {});

  // SIGTERM / SIGINT: stop accepting connections, let the requests in flight and the job being
  // run finish (closing the app stops its job worker), close the database, exit 0. Past the
  // shutdown timeout, or on a second signal, exit 1 at once (close-with-grace).
  const running = app;
  closeWithGrace({
    delay: shutdownTimeoutMs,
    logger: { error: (msg: unknown) => running.log.error(typeof msg === 'string' ? msg : { err: msg }, 'shutdown') },
  }, async ({ signal, err }) => {
    if (err) running.log.error({ err }, 'shutting down after an uncaught error');
    else running.log.info({ signal }, 'shutting down');
    metricsServer?.close();
    await running.close();
    await db.close();
    running.log.info('stopped');
  });
}

/** The probes the metrics port answers too (no token: as on the API port). */
const PROBES = new Set(['/healthz', '/readyz']);

/** Connections the metrics port keeps open at once. */
const METRICS_MAX_CONNECTIONS = 16;

/** `GET /metrics` (and the probes `/healthz`, `/readyz`) on a port of its own (kept off the API's port, e.g. reachable only inside the cluster). */
function serveMetrics(app: FastifyInstance, host: string, port: number, limits: { headersTimeoutMs: number; requestTimeoutMs: number; keepAliveTimeoutMs: number }, token: string | undefined): Promise<Server> {
  // The API port's timeouts (not Node's 90 s header timeout), and a few connections: a scraper needs one.
  const server = createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(2000, Math.max(100, Math.floor(limits.headersTimeoutMs / 4))),
  }, (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const known = path === '/metrics' || PROBES.has(path);
    if (!known || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: this port serves GET /metrics, /healthz and /readyz only\n');
      return;
    }
    if (PROBES.has(path)) {
      // The API port's own routes: probes pointed here still get in when the API port's connection caps are full.
      app.inject({ method: req.method as 'GET' | 'HEAD', url: path }).then(
        (r) => res.writeHead(r.statusCode, { 'content-type': String(r.headers['content-type'] ?? 'application/json'), 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : r.body),
        () => res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' }).end('not ready\n'),
      );
      return;
    }
    if (!scrapeAllowed(token, req.headers.authorization)) {
      res.writeHead(401, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics need Authorization: Bearer <EDGEPLANE_METRICS_TOKEN>\n');
      return;
    }
    metricsText(app).then(
      (m) => res.writeHead(200, { 'content-type': m!.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : m!.text),
      (err: Error) => {
        app.log.error({ err }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics could not be collected\n');
      },
    );
  });
  server.maxConnections = METRICS_MAX_CONNECTIONS;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
