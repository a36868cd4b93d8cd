import type { FastifyInstance } from 'fastify';

export const VERSION_HEADER = 'Service-Version';
export const API_VERSION = '2';

export interface RawResponse { status: number; headers: Record<string, string>; body: unknown }

/**
 * How the client reaches a service: HTTP to a URL, or in-process to the embedded fastify app.
 * `path` is relative to the API base (`/certificate_authorities?limit=100`), or an absolute URL the
 * API itself returned (`next_page_uri`).
 */
export interface Transport {
  readonly target: string;
  request(method: string, path: string, body?: unknown): Promise<RawResponse>;
  close(): Promise<void>;
}

function headers(apiKey: string, body: unknown): Record<string, string> {
  const h: Record<string, string> = { [VERSION_HEADER]: API_VERSION, authorization: `Bearer ${apiKey}`, accept: 'application/json' };
  if (body !== undefined) h['content-type'] = 'application/json';
  return h;
}

function parse(text: string): unknown {
  if (!text) return undefined;
  try { return JSON.parse(text); } catch { return text; }
}

/** HTTP with the platform `fetch`. */
export function fetchTransport(baseUrl: string, apiKey: string): Transport {
  const base = baseUrl.replace(/\/+$/, '');
  const origin = new URL(base).origin;
  return {
    target: base,
    async request(method, path, body) {
      let url = base + path;
      if (/^https?:\/\//.test(path)) {
        // Follow the API's own links only on the same origin: never send the key elsewhere.
        if (new URL(path).origin !== origin) throw new Error(`refusing to follow ${path}: not on ${origin}`);
        url = path;
      }
      const res = await fetch(url, { method, headers: headers(apiKey, body), body: body === undefined ? undefined : JSON.stringify(body) });
      const h: Record<string, string> = {};
      res.headers.forEach((v, k) => { h[k] = v; });
      return { status: res.status, headers: h, body: parse(await res.text()) };
    },
    async close() {},
  };
}

/** In-process requests to a fastify app (`inject`): the embedded service without a socket. */
export function injectTransport(app: FastifyInstance, apiKey: string, target: string, onClose: () => Promise<void>): Transport {
  return {
    target,
    async request(method, path, body) {
      const url = /^https?:\/\//.test(path) ? (({ pathname, search }) => pathname + search)(new URL(path)) : path;
      const res = await app.inject({
        method: method as 'GET', url, headers: headers(apiKey, body),
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
      const h: Record<string, string> = {};
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h[k] = String(v);
      return { status: res.statusCode, headers: h, body: parse(res.body) };
    },
    close: onClose,
  };
}
