import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import fp from 'fastify-plugin';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { newId } from '../../util/ids.js';
import { ApiError, type ErrorCode } from '../../contract/errors.js';
import { schemaError } from '../../contract/validation.js';

/**
 * The API's error shape for every response of the app, ops routes included: the error handler,
 * and an `Operation-Id` header on every response. The not-found handler is the API scope's
 * (`api.ts`): an unknown path is answered only to a caller who passed its version and key checks.
 */
export const errorsPlugin = fp(async (app) => {
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('Operation-Id', req.id);
    done();
  });
  app.setErrorHandler((err: FastifyError, req, reply) => sendError(err, req, reply));
}, { name: 'edgeplane-errors' });

/** A path fastify cannot route (bad percent-encoding, a segment over 100 characters) names no object. */
export function frameworkError(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const why = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path segment is over 100 characters' : 'the path is not valid percent-encoded UTF-8';
  sendError(new ApiError('ERR_NOT_FOUND', `no such path: ${req.method} ${(req.raw.url ?? '').split('?')[0].slice(0, 300)} (${why})`) as unknown as FastifyError, req, reply);
}

const CLIENT_ERRORS: Record<string, [ErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: ['ERR_HEADERS_TOO_LARGE', 'the request line and headers are over 16 KiB (a long query string counts)'],
  ERR_HTTP_REQUEST_TIMEOUT: ['ERR_REQUEST_TIMEOUT', 'the request was not received in time'],
};

/** Answers a request Node's HTTP parser refused, in the API's error shape, and closes the connection. */
export function clientError(err: NodeJS.ErrnoException, socket: Duplex): void {
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
const UNAVAILABLE_CODES = new Set(['57014', '57P01', '57P02', '57P03', '53300', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
export function isUnavailable(err: Error & { code?: string }): boolean {
  if (err.code && (UNAVAILABLE_CODES.has(err.code) || /^08/.test(err.code))) return true;
  return /^Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Connection is closed/i.test(err.message ?? '');
}

/** The error body every error response carries: `{error_code, status_code, msg, details: {operation_id, …}}`. */
export function errorBody(err: ApiError, operationId: string) {
  return {
    error_code: err.code,
    status_code: err.status,
    msg: err.message,
    details: { operation_id: operationId, ...err.details },
  };
}

export function sendError(err: FastifyError, req: FastifyRequest, reply: FastifyReply) {
  const apiErr = toApiError(err);
  if (apiErr.status >= 500) req.log.error({ err }, 'request failed');
  reply.header('Operation-Id', req.id);
  for (const [k, v] of Object.entries(apiErr.headers)) reply.header(k, v);
  reply.code(apiErr.status).send(errorBody(apiErr, String(req.id)));
}
