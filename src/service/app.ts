import { isUtf8 } from 'node:buffer';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Db } from '../store/db.js';
import { newId } from '../util/ids.js';
import { Authenticator, type Principal } from './auth.js';
import { ApiError, type ErrorCode } from '../contract/errors.js';
import { BODY_LIMIT } from '../contract/limits.js';
import { registerKindRoutes } from './kind-routes.js';
import { Resources, type Caller } from './resources.js';
import { serviceValidator } from './precompiled.js';
import rateLimitPlugin, { type RateLimitOptions } from './rate-limit.js';
import { findUnstorableText, schemaError } from '../contract/validation.js';
import { acceptedVersionHeaders, resolveVendorPrefix, type VendorOptions } from '../contract/vendor.js';

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
  /** Requests per minute per API key (`rate-limit.ts`); none without it (tests, the embedded CLI). */
  rateLimit?: RateLimitOptions;
  /** Connection limits and TLS of `serve` (README, Operations); Node's defaults without it. */
  server?: ServerOptions;
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
  /** PEM certificate chain and key: the service speaks HTTPS only. */
  tls?: { cert: string; key: string };
}

export const SUPPORTED_VERSION = '2';
export { BODY_LIMIT } from '../contract/limits.js';

declare module 'fastify' {
  interface FastifyRequest { principal?: Principal; baseUrl?: string }
}

/** Fields never written to logs, wherever they appear. */
export const REDACT_PATHS = [
  'req.headers.authorization', 'req.headers.cookie', 'headers.authorization',
  '*.client_secret', '*.secret', '*.api_key', '*.apiKey', '*.key_hash', '*.request_signing_key_pem',
  // A database error's own text about the row it failed on ("Failing row contains (…)": the
  // object's body, secrets and all) and the statement around it.
  'err.detail', 'err.where', 'err.internalQuery', 'err.cause.detail', 'err.cause.where',
];

/** The whole service as one fastify instance; `serve` listens with it, tests `inject` into it. */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const versionHeaders = acceptedVersionHeaders(opts);
  const vendorPrefix = resolveVendorPrefix(opts);
  const publicUrl = opts.publicUrl?.replace(/\/+$/, '');
  const auth = new Authenticator(opts.db, opts.authCacheMs);
  const resources = new Resources(opts.db, { vendorPrefix });

  const server = opts.server;
  // Node checks the header and request timeouts on a timer of its own, by default far less often
  // than the header timeout here (a slow-header connection outlived its timeout many times over):
  // checked often enough that a connection lives about as long as its timeout says.
  const timeouts = server
    ? { headersTimeout: server.headersTimeoutMs, requestTimeout: server.requestTimeoutMs, connectionsCheckingInterval: Math.min(2000, Math.max(100, Math.floor(server.headersTimeoutMs / 4))) }
    : undefined;
  const app = Fastify({
    ...(server ? { keepAliveTimeout: server.keepAliveTimeoutMs, requestTimeout: server.requestTimeoutMs } : {}),
    ...(server?.tls ? { https: { ...timeouts, cert: server.tls.cert, key: server.tls.key } } : timeouts ? { http: timeouts } : {}),
    bodyLimit: BODY_LIMIT,
    // While shutting down, a request that still arrives on an open keep-alive connection is served
    // (with Connection: close) rather than answered by fastify's own 503 body, outside the API's
    // error shape: the database closes only after every request in flight is done.
    return503OnClosing: false,
    genReqId: () => newId('op'),
    requestIdHeader: false,
    // A path fastify cannot route (bad percent-encoding, a segment over 100 characters) names no
    // object: answered in the API's error shape, not fastify's own.
    frameworkErrors: (err, req, reply) => {
      const why = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path segment is over 100 characters' : 'the path is not valid percent-encoded UTF-8';
      sendError(new ApiError('ERR_NOT_FOUND', `no such path: ${req.method} ${(req.raw.url ?? '').split('?')[0].slice(0, 300)} (${why})`) as unknown as FastifyError, req, reply);
    },
    // A request Node refuses before fastify sees it (headers over 16 KiB, bytes that are not
    // HTTP, a timeout): answered in the API's error shape with an operation id too.
    clientErrorHandler: (err, socket) => clientError(err as NodeJS.ErrnoException, socket),
    logController: new LogController({ requestIdLogLabel: 'operation_id' }),
    logger: opts.logLevel && opts.logLevel !== 'silent'
      ? { level: opts.logLevel, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, ...(opts.logStream ? { stream: opts.logStream } : {}) }
      : false,
  });

  if (server) app.server.maxConnections = server.maxConnections;

  // Route body schemas are precompiled (`npm run schemas`): start-up compiles none of them.
  app.setValidatorCompiler(({ schema }) => serviceValidator(schema));

  // JSON only; a body-less request that still names a content type (GET, DELETE) is accepted.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, raw, done) => {
    const bytes = raw as Buffer;
    if (bytes.length === 0) return done(null, undefined);
    // Decoding would turn bytes that are not UTF-8 into U+FFFD and store that: refused instead.
    if (!isUtf8(bytes)) return done(new ApiError('ERR_INVALID_JSON', 'body is not valid UTF-8 (JSON is sent as UTF-8)'), undefined);
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      // V8 quotes the input around the error ("Unexpected token 'S', \"…\" is not valid JSON"): a
      // secret in the body would come back in the error, and go to logs. The message without it.
      const why = (err as Error).message.replace(/, (?:\.\.\.)?".*$/s, '');
      return done(new ApiError('ERR_INVALID_JSON', `body is not valid JSON: ${why}`), undefined);
    }
    const bad = findUnstorableText(body);
    if (bad !== null) {
      return done(new ApiError('ERR_VALIDATION', `${bad.slice(0, 200) || 'body'}: text may not contain U+0000 or an unpaired UTF-16 surrogate (\\ud800–\\udfff)`), undefined);
    }
    done(null, body);
  });

  app.addHook('onRequest', async (req, reply) => {
    reply.header('Operation-Id', req.id);
    req.baseUrl = publicUrl ?? requestBase(req); // a Host no uri can be built on is refused before anything is done
    checkVersion(req, versionHeaders);
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw unauthorized(header ? 'Authorization header must be "Bearer <api key>"' : 'missing Authorization: Bearer <api key>');
    const principal = await auth.resolve(match[1]);
    if (!principal) throw unauthorized('unknown or revoked API key', 'invalid_token');
    req.principal = principal;
  });

  const callerOf = (req: FastifyRequest): Caller => ({
    accountId: req.principal!.accountId,
    baseUrl: req.baseUrl!,
  });

  if (opts.rateLimit) await app.register(rateLimitPlugin, opts.rateLimit);
  registerKindRoutes(app, resources, callerOf);

  app.setNotFoundHandler(async (req) => {
    throw new ApiError('ERR_NOT_FOUND', `no such path: ${req.method} ${req.url.split('?')[0]}`);
  });
  app.setErrorHandler((err: FastifyError, req, reply) => sendError(err, req, reply));
  return app;
}

/** `host`, `host:port`, `[v6]`, `[v6]:port`: what may stand between `http://` and the path of a `uri`. */
const AUTHORITY = /^(?:[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * The scheme and authority `uri`s are built on when no public URL is configured: the request's
 * `Host`. One that is not a host[:port] (`a b`, `evil.com/x?y=`) would make every `uri` and stored
 * SAML URL of the response point elsewhere or not parse: refused. HTTP/1.0 may send none: the
 * address the request came in on is used.
 */
function requestBase(req: FastifyRequest): string {
  const host = req.headers.host;
  if (host === undefined || host === '') {
    const local = (req.socket.localAddress ?? '127.0.0.1').replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1');
    return `${req.protocol}://${local.includes(':') ? `[${local}]` : local}:${req.socket.localPort}`;
  }
  if (!AUTHORITY.test(host)) {
    throw new ApiError('ERR_BAD_REQUEST', `Host header ${JSON.stringify(host.slice(0, 100))} is not a host[:port]: the service builds each uri from it (or set EDGEPLANE_PUBLIC_URL)`);
  }
  return `${req.protocol}://${host}`;
}

const CLIENT_ERRORS: Record<string, [ErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: ['ERR_HEADERS_TOO_LARGE', 'the request line and headers are over 16 KiB (a long query string counts)'],
  ERR_HTTP_REQUEST_TIMEOUT: ['ERR_REQUEST_TIMEOUT', 'the request was not received in time'],
};

/** Answers a request Node's HTTP parser refused, in the API's error shape, and closes the connection. */
function clientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [code, msg] = CLIENT_ERRORS[err.code ?? ''] ?? ['ERR_BAD_REQUEST', `the request is not valid HTTP/1.1 (${err.code ?? err.message})`];
  const e = new ApiError(code, msg);
  const operationId = newId('op');
  const body = JSON.stringify({ error_code: e.code, status_code: e.status, msg: e.message, details: { operation_id: operationId } });
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nOperation-Id: ${operationId}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

function checkVersion(req: FastifyRequest, names: string[]) {
  const name = names.find((n) => req.headers[n.toLowerCase()] !== undefined);
  if (!name) throw new ApiError('ERR_VERSION_MISSING', `missing version header: send ${names[0]}: ${SUPPORTED_VERSION}`);
  const value = String(req.headers[name.toLowerCase()]).trim();
  if (value !== SUPPORTED_VERSION) {
    throw new ApiError('ERR_VERSION_UNSUPPORTED', `${name}: ${JSON.stringify(value)} is not supported; this service serves version ${SUPPORTED_VERSION}`);
  }
}

function unauthorized(msg: string, error?: string): ApiError {
  return new ApiError('ERR_UNAUTHORIZED', msg, {}, { 'www-authenticate': error ? `Bearer error="${error}"` : 'Bearer' });
}

/** fastify's own errors, mapped to the catalog. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'ERR_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_BODY_TOO_LARGE: 'ERR_PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'ERR_VALIDATION',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'ERR_INVALID_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'ERR_INVALID_JSON',
};

function toApiError(err: FastifyError): ApiError {
  if (err instanceof ApiError) return err;
  if (err.validation?.length) return schemaError(err.validation[0] as never);
  const mapped = err.code ? FASTIFY_CODES[err.code] : undefined;
  if (mapped === 'ERR_UNSUPPORTED_MEDIA_TYPE') return new ApiError(mapped, 'request bodies must be Content-Type: application/json');
  if (mapped === 'ERR_PAYLOAD_TOO_LARGE') return new ApiError(mapped, 'request body is larger than 1 MiB');
  if (mapped) return new ApiError(mapped, err.message);
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return new ApiError('ERR_VALIDATION', err.message);
  if (isUnavailable(err)) return new ApiError('ERR_UNAVAILABLE', 'the database is unavailable; retry shortly', {}, { 'retry-after': '1' });
  return new ApiError('ERR_INTERNAL', 'internal error; quote the operation id when reporting it');
}

/**
 * The database was not there or went away mid-request (a restart, a failover, `pg_terminate_backend`,
 * too many connections): a transient condition, not a fault of the service or of the request. A
 * write cut off while committing may have been stored; clients look before creating again (the
 * reconciler does).
 */
const UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '53300', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
function isUnavailable(err: Error & { code?: string }): boolean {
  if (err.code && (UNAVAILABLE_CODES.has(err.code) || /^08/.test(err.code))) return true;
  return /^Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection is closed/i.test(err.message ?? '');
}

function sendError(err: FastifyError, req: FastifyRequest, reply: FastifyReply) {
  const apiErr = toApiError(err);
  if (apiErr.status >= 500) req.log.error({ err }, 'request failed');
  reply.header('Operation-Id', req.id);
  for (const [k, v] of Object.entries(apiErr.headers)) reply.header(k, v);
  reply.code(apiErr.status).send({
    error_code: apiErr.code,
    status_code: apiErr.status,
    msg: apiErr.message,
    details: { operation_id: String(req.id), ...apiErr.details },
  });
}
