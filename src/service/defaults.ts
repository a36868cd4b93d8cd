/**
 * The service's defaults that the CLI reads too (`service-config.ts`), in a module that imports
 * nothing: a command that only plans does not load the rate limiter (ioredis)
 * or the idempotency layer to learn two numbers.
 */

/** Requests per minute per API key when `EDGEPLANE_RATE_LIMIT` is not set (docs/api.md says why this many). */
export const DEFAULT_RATE_LIMIT = 10_000;

/**
 * Unknown or revoked API keys (and status page sessions) per minute per client address when
 * `EDGEPLANE_AUTH_FAILURE_LIMIT` is not set: far above a person retyping a key or a misconfigured
 * job retrying, far below what costs a replica's database anything (docs/operations.md).
 */
export const DEFAULT_AUTH_FAILURE_LIMIT = 60;

/** Keys kept per account at most when not configured (`EDGEPLANE_IDEMPOTENCY_KEYS`; docs/api.md says why this many). */
export const DEFAULT_MAX_KEYS_PER_ACCOUNT = 10_000;

/** Bytes of kept `Idempotency-Key` responses per account at most when not configured (`EDGEPLANE_IDEMPOTENCY_MIB`; docs/api.md). */
export const DEFAULT_MAX_BYTES_PER_ACCOUNT = 32 * 1024 * 1024;

/** A response body of more bytes of JSON than this is kept for its key by reference to its object, not as sent (docs/api.md). */
export const DEFAULT_MAX_KEPT_RESPONSE_BYTES = 16 * 1024;

/** How long a Redis command or connect of the rate limit may take (`EDGEPLANE_REDIS_TIMEOUT_MS`). */
export const DEFAULT_REDIS_TIMEOUT_MS = 100;
