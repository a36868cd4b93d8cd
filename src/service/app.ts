import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifySchemaCompiler, type FastifySerializerCompiler } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Db } from '../store/db.js';
import { newId } from '../util/ids.js';
import { BODY_LIMIT } from '../contract/limits.js';
import { serviceValidator } from './precompiled.js';
import { serviceSerializer } from './precompiled-serializers.js';
import type { RateLimitOptions } from './rate-limit.js';
import type { IdempotencyOptions } from './writes/idempotency.js';
import type { SyncRecordOptions } from './routes/sync-runs.js';
import { acceptedVersionHeaders, resolveVendorPrefix, type VendorOptions } from '../contract/vendor.js';
import { abuseProcessingPlugin, type JobWorkerSettings } from './plugins/abuse-processing.js';
import { apiPlugin } from './plugins/api.js';
import { databasePlugin } from './plugins/database.js';
import { clientError, errorsPlugin, frameworkError } from './plugins/errors.js';
import { jsonBodyPlugin } from './plugins/json-body.js';
import { metricsPlugin } from './plugins/metrics.js';
import { openapiPlugin } from './plugins/openapi.js';
import { opsRoutesPlugin } from './plugins/ops-routes.js';
import { DegradedChecks } from './health.js';
import { guardConnections, type RefusedConnections } from './connections.js';
import { AuthFailureLimit } from './auth-failures.js';
import type { KeyRing } from './writes/sealing.js';
import { ServiceSecrets, type Secrets } from './writes/secrets.js';
import { KeyRingError } from './writes/sealing.js';

/** The service's settings; the version headers and vendor prefix are described in `vendor.ts`. */
export interface AppOptions extends VendorOptions {
  db: Db;
  /** Base of every `uri`; default: scheme and Host of the request. */
  publicUrl?: string;
  /** pino level; `silent` (the default) for tests and the embedded CLI. */
  logLevel?: string;
  /** Where log lines go (default stdout). */
  logStream?: DestinationStream;
  /** How long a resolved API key is trusted before it is looked up again. */
  authCacheMs?: number;
  /** Unknown or revoked API keys per minute per client address (`auth-failures.ts`); no limit without it (tests, the embedded CLI). */
  authFailureLimit?: number;
  /** Requests per minute per API key (`rate-limit.ts`); none without it (tests, the embedded CLI). */
  rateLimit?: RateLimitOptions;
  /** How many `Idempotency-Key` responses an account keeps (`idempotency.ts`); 10,000 without it. */
  idempotency?: IdempotencyOptions;
  /** The sync record's retention: runs kept per stack (`sync-runs.ts`); 200 without it. */
  syncRecord?: SyncRecordOptions;
  /** Connection limits and TLS of `serve` (README, Operations); Node's defaults without it. */
  server?: ServerOptions;
  /**
   * Metrics: `route` (the default) collects them and serves `GET /metrics`; `collect` collects them
   * without the route (`serve --metrics-port` serves them on a port of their own); `off`.
   */
  metrics?: 'route' | 'collect' | 'off';
  /** When set, `GET /metrics` needs `Authorization: Bearer <it>` (EDGEPLANE_METRICS_TOKEN). */
  metricsToken?: string;
  /** Serve `GET /openapi.json` (default); the embedded CLI service, which nobody reads it from, does not. */
  openapi?: boolean;
  /** Run a background job worker while the app is up (`serve` does); default none. */
  jobWorker?: JobWorkerSettings | false;
  /** Serve the status page at `/ui/` (`serve` does unless `--ui off`); default off. */
  ui?: boolean;
  /**
   * The key ring secrets are sealed with (`sealing.ts`; EDGEPLANE_SECRETS_KEYS, or the state
   * directory's). Without one they are stored as they come. Start-up refuses a database holding
   * values sealed by a key the ring lacks, and seals plain values when one is given.
   */
  secrets?: KeyRing;
  /** Secrets already started (`startSecrets`): for an app built without a database (the schema collection). */
  startedSecrets?: Secrets;
  /** Compiles the routes' body schemas instead of the precompiled set (`npm run schemas` collects them with it). */
  validatorCompiler?: FastifySchemaCompiler<unknown>;
  /** Compiles the routes' response schemas instead of the precompiled set (`npm run schemas` collects them with it). */
  serializerCompiler?: FastifySerializerCompiler<unknown>;
}

export interface ServerOptions {
  /** Time to receive a request's line and headers; a slower client gets 408 and is disconnected. */
  headersTimeoutMs: number;
  /** Time to receive a whole request, body included. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection is kept open. */
  keepAliveTimeoutMs: number;
  /** Connections open at once; more are closed as they arrive. */
  maxConnections: number;
  /** Connections open at once from one client address (0: no such limit); more are closed as they arrive. */
  maxConnectionsPerAddress: number;
  /** Connections from one address with no request in flight (headers half-sent, TLS handshake, idle; 0: no such limit). */
  maxWaitingConnectionsPerAddress: number;
  /** The last this many of `maxConnections` only for addresses holding few connections (`connections.ts`; 0: none). */
  connectionReserve: number;
  /** Time for a TLS client to finish its handshake (HTTPS only). */
  tlsHandshakeTimeoutMs: number;
  /** Proxies trusted to name the client (`X-Forwarded-For`) and the scheme (`X-Forwarded-Proto`): fastify's `trustProxy` (addresses/CIDRs, or a hop count); none without it. */
  trustProxy?: string | number;
  /** PEM certificate chain and key: the service speaks HTTPS only. */
  tls?: { cert: string; key: string };
}

export { SUPPORTED_VERSION } from './plugins/version-header.js';
export { BODY_LIMIT } from '../contract/limits.js';

/** Fields never written to logs, wherever they appear. */
export const REDACT_PATHS = [
  'req.headers.authorization', 'req.headers.cookie', 'headers.authorization',
  '*.client_secret', '*.secret', '*.api_key', '*.apiKey', '*.key_hash', '*.request_signing_key_pem',
  // A database error's own text about the row it failed on ("Failing row contains (…)": the
  // object's body, secrets and all) and the statement around it.
  'err.detail', 'err.where', 'err.internalQuery', 'err.cause.detail', 'err.cause.where',
];

/**
 * The whole service as one fastify instance; `serve` listens with it, tests `inject` into it. It
 * is a tree of named plugins, each declaring the ones it needs (fastify checks the order):
 *
 *   errors, json-body, database, metrics        the root: every route, ops routes included
 *   openapi                                     /openapi.json, from the routes' schemas
 *   ops-routes                                  /healthz, /readyz, /metrics: no version, no key
 *   abuse-processing                            the job worker's life with the app's
 *   api (encapsulated)                          Host check, then
 *     version-header, auth, kind-routes         every kind's operations, 405s and the 404
 *
 * Plugins start loading as soon as they are registered: a setting made on the returned instance
 * (a validator compiler, a hook) does not reach the plugins' routes; `AppOptions` carries them.
 */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const server = opts.server;
  // Node checks the header and request timeouts on a timer of its own, by default far less often
  // than the header timeout here (a slow-header connection outlived its timeout many times over):
  // checked often enough that a connection lives about as long as its timeout says.
  const timeouts = server
    ? {
      headersTimeout: server.headersTimeoutMs, requestTimeout: server.requestTimeoutMs, connectionsCheckingInterval: Math.min(2000, Math.max(100, Math.floor(server.headersTimeoutMs / 4))),
      // An HTTP/1.1 request without Host is refused by the API scope, in its error shape, not by Node's bare 400.
      requireHostHeader: false,
    }
    : undefined;
  const app = Fastify({
    ...(server ? { keepAliveTimeout: server.keepAliveTimeoutMs, requestTimeout: server.requestTimeoutMs } : {}),
    ...(server?.tls ? { https: { ...timeouts, handshakeTimeout: server.tlsHandshakeTimeoutMs, cert: server.tls.cert, key: server.tls.key } } : timeouts ? { http: timeouts } : {}),
    bodyLimit: BODY_LIMIT,
    // A hop count as fastify's own number form does it (its types take only the function).
    ...(server?.trustProxy !== undefined ? { trustProxy: typeof server.trustProxy === 'number' ? hopsTrusted(server.trustProxy) : server.trustProxy } : {}),
    // While shutting down, a request that still arrives on an open keep-alive connection is served
    // (with Connection: close) rather than answered by fastify's own 503 body, outside the API's
    // error shape: the database closes only after every request in flight is done.
    return503OnClosing: false,
    genReqId: () => newId('op'),
    requestIdHeader: false,
    // A path fastify cannot route (bad percent-encoding, a segment over 100 characters) names no
    // object: answered in the API's error shape, not fastify's own.
    frameworkErrors: (err, req, reply) => frameworkError(err as FastifyError, req, reply),
    // A request Node refuses before fastify sees it (headers over 16 KiB, bytes that are not
    // HTTP, a timeout): answered in the API's error shape with an operation id too.
    clientErrorHandler: (err, socket) => clientError(err as NodeJS.ErrnoException, socket),
    logController: new LogController({ requestIdLogLabel: 'operation_id' }),
    logger: opts.logLevel && opts.logLevel !== 'silent'
      ? { level: opts.logLevel, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, ...(opts.logStream ? { stream: opts.logStream } : {}) }
      : false,
  });

  let refusedConnections: RefusedConnections | undefined;
  if (server) {
    app.server.maxConnections = server.maxConnections;
    refusedConnections = guardConnections(app, { perAddress: server.maxConnectionsPerAddress, waitingPerAddress: server.maxWaitingConnectionsPerAddress, maxConnections: server.maxConnections, reserve: server.connectionReserve });
  }

  // Route body schemas are precompiled (`npm run schemas`): start-up compiles none of them.
  app.setValidatorCompiler(opts.validatorCompiler ?? (({ schema }) => serviceValidator(schema)));

  // Response schemas (`kinds/response-schemas.ts`) are serialised by fast-json-stringify's code,
  // precompiled by `npm run schemas` and loaded on a route's first response (else compiled then),
  // not at start-up: the CLI's embedded service starts once per command and uses a few routes.
  app.setSerializerCompiler(opts.serializerCompiler ?? (({ schema }) => serviceSerializer(schema)));

  // Started now, awaited once the plugins and routes are registered (they ask nothing of the
  // database: the embedded service registers them while its engine still opens): a database that
  // needs a key the ring lacks is refused before the app is returned.
  const secrets = opts.startedSecrets ? ServiceSecrets.of(opts.startedSecrets) : new ServiceSecrets(opts.db, opts.secrets, (msg) => app.log.info(msg));
  const secretsStarted = secrets.start().then(() => undefined, (err: unknown) => err);

  const metrics = opts.metrics ?? 'route';
  const versionHeaders = acceptedVersionHeaders(opts);
  app.register(errorsPlugin);
  app.register(jsonBodyPlugin);
  app.register(databasePlugin, { db: opts.db, secrets });
  // One count for the API's keys and the status page's sign-ins and sessions.
  const authFailures = opts.authFailureLimit ? new AuthFailureLimit(opts.authFailureLimit) : undefined;
  if (authFailures) app.addHook('onClose', (_app, done) => { authFailures.close(); done(); });
  app.register(metricsPlugin, { enabled: metrics !== 'off', refusedConnections, authFailures });
  // Before every route: it records them as they are registered.
  if (opts.openapi !== false) app.register(openapiPlugin, { versionHeader: versionHeaders[0] });
  const health = new DegradedChecks();
  app.register(opsRoutesPlugin, { metricsRoute: metrics === 'route', metricsToken: opts.metricsToken, health });
  app.register(abuseProcessingPlugin, { worker: opts.jobWorker ?? false });
  app.register(apiPlugin, {
    versionHeaders,
    vendorPrefix: resolveVendorPrefix(opts),
    publicUrl: opts.publicUrl,
    authCacheMs: opts.authCacheMs,
    authFailures,
    rateLimit: opts.rateLimit && { ...opts.rateLimit, health },
    idempotency: opts.idempotency,
    syncRecord: opts.syncRecord,
  });
  if (opts.ui) {
    // Its own encapsulated scope: its form parser, error pages and headers stay off the API.
    const { uiPlugin } = await import('./ui/plugin.js');
    app.register(uiPlugin, { vendorPrefix: resolveVendorPrefix(opts), publicUrl: opts.publicUrl, authCacheMs: opts.authCacheMs, authFailures, tls: !!server?.tls, prefix: '/ui' });
  }
  await app.after(); // the plugins registered, routes and all: what returning the app would do after the secrets
  const notStarted = await secretsStarted;
  if (notStarted instanceof KeyRingError) {
    await app.close().catch(() => {});
    throw notStarted;
  }
  // The database cannot be read yet (not reachable, not migrated): /readyz says so; started on first use.
  if (notStarted) app.log.warn({ err: notStarted }, 'secrets not started: the database could not be read; they start with the first request that needs them');
  return app;
}

/** fastify's `trustProxy` for the nearest `hops` proxies: an address `hop` steps from the socket is a proxy while `hop < hops`. */
function hopsTrusted(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}
