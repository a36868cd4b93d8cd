import type { FastifyInstance } from 'fastify';

/**
 * The request headers every transport sends, and the in-process transport of the embedded
 * service's thread (`injector`): apart from `transport.ts`, so that thread does not load the HTTP
 * client (undici) it never uses.
 */
export const VERSION_HEADER = 'Service-Version';
export const API_VERSION = '2';

/** The transport's own headers. `Prefer: etags`: lists give each object's ETag (the plan records what it saw). */
export function headers(apiKey: string, body: unknown, extra?: Record<string, string>): Record<string, string> {
  const h: Record<string, string> = { [VERSION_HEADER]: API_VERSION, authorization: `Bearer ${apiKey}`, accept: 'application/json', prefer: 'etags' };
  if (body !== undefined) h['content-type'] = 'application/json';
  for (const [k, v] of Object.entries(extra ?? {})) {
    const name = k.toLowerCase();
    if (name !== 'authorization' && name !== VERSION_HEADER.toLowerCase()) h[name] = v;
  }
  return h;
}

/**
 * One request to a fastify app in-process (`inject`): the embedded service without a socket. The
 * body stays text; the thread that uses it parses it. Absolute URLs the API returned
 * (`next_page_uri`) are requested by their path.
 */
export function injector(app: FastifyInstance, apiKey: string) {
  return async (method: string, path: string, body?: unknown, extra?: Record<string, string>): Promise<{ status: number; headers: Record<string, string>; text: string }> => {
    const url = /^https?:\/\//.test(path) ? (({ pathname, search }) => pathname + search)(new URL(path)) : path;
    const res = await app.inject({
      method: method as 'GET', url, headers: headers(apiKey, body, extra),
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h[k] = String(v);
    return { status: res.statusCode, headers: h, text: res.body };
  };
}
