import http from 'node:http';
import https from 'node:https';
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

/**
 * HTTP with `node:http` / `node:https` over a keep-alive agent of its own (closed with the
 * transport). Not the platform `fetch`: its web streams cost about a third more of the main
 * thread per page, and a plan reads thousands of objects while it works on the manifests.
 */
export function httpTransport(baseUrl: string, apiKey: string): Transport {
  const base = baseUrl.replace(/\/+$/, '');
  const origin = new URL(base).origin;
  const secure = origin.startsWith('https:');
  const agent = secure ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
  return {
    target: base,
    request(method, path, body) {
      let url = base + path;
      if (/^https?:\/\//.test(path)) {
        // Follow the API's own links only on the same origin: never send the key elsewhere.
        if (new URL(path).origin !== origin) return Promise.reject(new Error(`refusing to follow ${path}: not on ${origin}`));
        url = path;
      }
      const payload = body === undefined ? undefined : JSON.stringify(body);
      return new Promise<RawResponse>((resolve, reject) => {
        const h = headers(apiKey, body);
        if (payload !== undefined) h['content-length'] = String(Buffer.byteLength(payload));
        const req = (secure ? https : http).request(url, { method, agent, headers: h }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const h: Record<string, string> = {};
            for (const k in res.headers) {
              const v = res.headers[k];
              if (v !== undefined) h[k] = Array.isArray(v) ? v.join(', ') : v;
            }
            resolve({ status: res.statusCode ?? 0, headers: h, body: parse(Buffer.concat(chunks).toString('utf8')) });
          });
        });
        req.on('error', reject);
        req.end(payload);
      });
    },
    async close() {
      agent.destroy();
    },
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
