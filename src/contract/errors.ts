/**
 * The one catalog of error codes. Every error response is
 * `{error_code, status_code, msg, details: {operation_id, …}}`; the README documents this table.
 */
export const ERROR_CATALOG = {
  ERR_VERSION_MISSING: { status: 400, summary: 'the version header is missing' },
  ERR_VERSION_UNSUPPORTED: { status: 400, summary: 'the version header names a version this service does not serve' },
  ERR_INVALID_JSON: { status: 400, summary: 'the body is not valid JSON' },
  ERR_VALIDATION: { status: 400, summary: 'a field breaks a rule; the message names the field and the rule' },
  ERR_UNKNOWN_FIELD: { status: 400, summary: 'the body has a field the operation does not take' },
  ERR_IMMUTABLE_FIELD: { status: 400, summary: 'the field can be set on create only' },
  ERR_ID_MISMATCH: { status: 400, summary: 'an id in the body differs from the id in the path' },
  ERR_INVALID_QUERY: { status: 400, summary: 'a query parameter is unknown or out of range' },
  ERR_BAD_REQUEST: { status: 400, summary: 'the request is not valid HTTP, or its Host header is not a host[:port]' },
  ERR_LIMIT_EXCEEDED: { status: 400, summary: 'the write would take an object past a documented limit; the message names the limit' },
  ERR_INVALID_REFERENCE: { status: 400, summary: 'a referenced object does not exist in this account' },
  ERR_INVALID_CA_PEM: { status: 400, summary: 'ca_pem is not exactly one CA certificate' },
  ERR_REFERENCE_CYCLE: { status: 400, summary: 'the references would form a cycle' },
  ERR_UNAUTHORIZED: { status: 401, summary: 'missing, malformed, unknown or revoked API key' },
  ERR_FORBIDDEN: { status: 403, summary: 'the account is not authorized for this operation' },
  ERR_FORBIDDEN_SCOPE: { status: 403, summary: 'the API key\'s scope does not cover the operation (a read key and a write; a key limited to stacks and another stack\'s object, lock or run); details name what the key has and what was needed' },
  ERR_NOT_FOUND: { status: 404, summary: 'no such object in this account, or no such path' },
  ERR_MODULE_NOT_CONFIGURED: { status: 404, summary: 'the module is not configured on this object' },
  ERR_METHOD_NOT_ALLOWED: { status: 405, summary: 'the path exists but not with this method (see Allow)' },
  ERR_IN_USE: { status: 409, summary: 'the object is still referenced; the message names the referrers' },
  ERR_HOSTPORT_IN_USE: { status: 409, summary: 'the hostport is served by another edge, or overlaps a hostport of another account' },
  ERR_HOSTNAME_BANNED: { status: 409, summary: 'the hostport names a hostname banned after an abuse report' },
  ERR_ROUTE_MATCH_IN_USE: { status: 409, summary: 'the edge already has a route with this match' },
  ERR_CONFLICT: { status: 409, summary: 'the request conflicts with the current state' },
  ERR_STACK_LOCKED: { status: 409, summary: 'another live lock holds the stack; details name its holder, creation and expiry' },
  ERR_IDEMPOTENCY_IN_PROGRESS: { status: 409, summary: 'a request with this Idempotency-Key is still in progress; retry it shortly' },
  ERR_PRECONDITION_FAILED: { status: 412, summary: 'If-Match names a version the object no longer has; nothing was changed' },
  ERR_IDEMPOTENCY_KEY_REUSED: { status: 422, summary: 'the Idempotency-Key was used with another method, path or body within 24 hours' },
  ERR_REQUEST_TIMEOUT: { status: 408, summary: 'the request was not received in time' },
  ERR_PAYLOAD_TOO_LARGE: { status: 413, summary: 'the body is over 1 MiB' },
  ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, summary: 'a body must be application/json' },
  ERR_RATE_LIMITED: { status: 429, summary: 'the API key sent more requests this minute than the service allows; retry after Retry-After seconds' },
  ERR_AUTH_FAILURES: { status: 429, summary: 'the client address sent more unknown or revoked API keys this minute than the service allows; retry after Retry-After seconds' },
  ERR_HEADERS_TOO_LARGE: { status: 431, summary: 'the request line and headers are over 16 KiB' },
  ERR_INTERNAL: { status: 500, summary: 'a fault in the service; the operation id finds it in the log' },
  ERR_UNAVAILABLE: { status: 503, summary: 'the database could not be reached or dropped the connection; retry after Retry-After seconds' },
} as const satisfies Record<string, { status: number; summary: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOG;

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    msg: string,
    readonly details: Record<string, string> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(msg);
    this.status = ERROR_CATALOG[code].status;
    this.name = 'ApiError';
  }
}
