// One HTTP exchange with undici, the body kept as text, for the HTTP transport (transport.ts).
import type { Dispatcher, Pool } from 'undici';

export interface Exchanged { status: number; headers: Record<string, string>; text: string }

/**
 * A keep-alive connection pool to `origin`, one per transport. Its own deadlines for the answer's
 * headers and for each pause in its body are the request timeout too (a backstop: `exchange` cuts
 * the whole exchange at that time), and so is its connect timeout (undici's own default is 10 s).
 */
export function connectionPool(origin: string, timeoutMs: number): ConnectionPool {
  // undici is loaded at the first request, not with the CLI: a command on the embedded service
  // (or one that sends nothing) never needs it, and loading it costs the CLI's start about as much
  // as the rest of its modules.
  let pool: Promise<Pool> | undefined;
  const lazy: ConnectionPool = {
    made: undefined,
    get: () => (pool ??= import('undici').then(({ Pool }) => (lazy.made = new Pool(origin, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connect: { timeout: timeoutMs } })))),
    destroy: async () => { if (pool) await (await pool).destroy(); },
  };
  return lazy;
}

/**
 * A keep-alive pool to one origin (`connectionPool`), made at its first use. `made`: the pool once
 * made, used at once (a request sent without waiting a turn: the next page is asked for before
 * the caller's thread gets busy with the page just read).
 */
export interface ConnectionPool { made: Pool | undefined; get(): Promise<Pool>; destroy(): Promise<void> }

/**
 * The error of a request that got no (whole) answer in time: code `EP_TIMEOUT`, which the client
 * does not retry (a service that does not answer would only be waited for again).
 */
export function timeoutError(url: string, timeoutMs: number): Error & { code: string } {
  const u = new URL(url);
  return Object.assign(new Error(`${u.origin}${u.pathname}: no answer within ${timeoutMs / 1000} s (the request timeout: --timeout or EDGEPLANE_TIMEOUT)`), { code: 'EP_TIMEOUT' });
}

/** OpenSSL's codes for a certificate whose chain ends at no CA Node trusts. */
const UNTRUSTED = new Set(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY']);

/** A certificate that is not the host's or not valid now: refused again on every try. */
const BAD_CERTIFICATE = new Set(['ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_REVOKED', 'CERT_UNTRUSTED', 'CERT_REJECTED']);

/** undici's own deadlines (`connectionPool`): the request timeout as well. */
const UNDICI_TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Sends `payload` (or nothing) to `url` (on the pool's origin); resolves with the status, the
 * headers (repeated ones joined) and the body's text. The whole exchange (connection, answer and
 * body) must be done within `timeoutMs`, or it is cut and rejected with `timeoutError`.
 */
export function exchange(url: string, how: ExchangeOptions, payload?: string): Promise<Exchanged> {
  return exchangeWith(url, how, payload, (body) => body.text()).then(({ body, ...rest }) => ({ ...rest, text: body }));
}

export interface ExchangeOptions { method: string; pool: ConnectionPool; headers: Record<string, string>; timeoutMs: number }

/** `exchange`, the body read by `read` (its bytes, for a page handed to another thread). */
export async function exchangeWith<T>(url: string, { method, pool, headers, timeoutMs }: ExchangeOptions, payload: string | undefined, read: (body: Dispatcher.ResponseData['body']) => Promise<T>): Promise<{ status: number; headers: Record<string, string>; body: T }> {
  const u = new URL(url);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(timeoutError(url, timeoutMs)), timeoutMs);
  try {
    const res = await (pool.made ?? await pool.get()).request({ method: method as 'GET', path: u.pathname + u.search, headers, body: payload, signal: deadline.signal });
    const body = await read(res.body);
    const h: Record<string, string> = {};
    for (const k in res.headers) {
      const v = res.headers[k];
      if (v !== undefined) h[k] = Array.isArray(v) ? v.join(', ') : v;
    }
    return { status: res.statusCode, headers: h, body };
  } catch (e) {
    const err = e as Error & { code?: string };
    if (err.code === 'EP_TIMEOUT') throw err;
    if (err.code !== undefined && UNDICI_TIMEOUTS.has(err.code)) throw timeoutError(url, timeoutMs);
    // A network error says which API it was (its origin, never a header): `connect ECONNREFUSED`
    // alone does not. Its code stays, for the retries that read it. https:// to a port that speaks
    // plain HTTP: OpenSSL's "wrong version number" says only that.
    // A certificate no CA Node trusts signed (a deployment's private CA, `serve --tls-cert` with a
    // self-signed one): how to trust it (README).
    // http:// to a port that speaks TLS: the server closes the connection without a word.
    const hint = /wrong version number/.test(err.message) ? ' (the server there does not speak TLS: is it http://?)'
      : u.protocol === 'http:' && /other side closed|socket hang up/i.test(err.message) ? ` (if the server there speaks HTTPS, the URL is https://${u.host})`
      : err.code !== undefined && UNTRUSTED.has(err.code) ? ' (not signed by a CA Node trusts: a private CA goes in NODE_EXTRA_CA_CERTS=/path/ca.pem)' : '';
    // Not a passing fault: the same answer would come again (`isFinal`: not retried).
    const final = (err.code !== undefined && (UNTRUSTED.has(err.code) || BAD_CERTIFICATE.has(err.code))) || /wrong version number/.test(err.message);
    throw Object.assign(err, { message: `${u.origin}: ${err.message.trimEnd()}${hint}`, ...(final ? { final: true } : {}) });
  } finally {
    clearTimeout(timer);
  }
}
