import { connectionPool, exchange, timeoutError } from './http-exchange.js';
import { withConnectionRetry } from './connection-retry.js';
import { apiUrls } from './api-url.js';
import type { PageReaderInput } from './http-page-reader.js';
import { parse, WorkerChannel, type HandBack } from './worker-channel.js';
import { siblingModule, startWorker } from '../util/worker.js';
import { withoutCredentials } from '../util/shown-url.js';

import { API_VERSION, headers, VERSION_HEADER } from './headers.js';

export { API_VERSION, VERSION_HEADER };
export { injector } from './headers.js';

export interface RawResponse { status: number; headers: Record<string, string>; body: unknown }

/**
 * How the client reaches a service: HTTP to a URL, or in-process to the embedded fastify app.
 * `path` is relative to the API base (`/certificate_authorities?limit=100`), or an absolute URL the
 * API itself returned (`next_page_uri`).
 */
export interface Transport {
  readonly target: string;
  /**
   * One request. `headers` are sent besides the transport's own (version, key, `Prefer: etags`):
   * `Idempotency-Key`, `If-Match`.
   */
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<RawResponse>;
  /**
   * Reads a list from `path` on, following each page's next link itself: each next page is asked
   * for as soon as the previous one arrives, not when the caller gets round to it. `onPage` gets
   * each 2xx response in order and returns whether it wants the next one. Resolves with null when
   * the list is read (or the caller stopped), or with the page it stopped at: a link it does not
   * follow, a request that failed, or a response other than 2xx (`res`). The caller takes over
   * from there, with its retries. Optional: without it, the client reads page after page itself.
   */
  readPages?(path: string, onPage: (res: RawResponse) => boolean): Promise<HandBack>;
  /** Whether `readPages` reads ahead now (its thread is running): lists are read there only then. */
  readsAhead?(): boolean;
  /**
   * A list is long (`READ_AHEAD_AFTER` pages and more to come): a transport whose reader thread
   * starts when needed starts it (`readsAhead` turns true once it runs; until then the client
   * reads the pages itself).
   */
  readAhead?(): void;
  close(): Promise<void>;
}

/** A request the transport did not send, and would not send if asked again: code `EP_NOT_SENT` (`isFinal`). */
function notSent(message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code: 'EP_NOT_SENT' });
}

/** How long a request may take, from sending to the last byte of its answer, unless told otherwise. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface HttpTransportOptions {
  /** Each request's deadline (`--timeout`, `EDGEPLANE_TIMEOUT`); default 30 s. */
  timeoutMs?: number;
  /** `false`: lists are read on this thread, never by a page reader (`readAhead`). */
  readAhead?: boolean;
}

/**
 * HTTP with undici over a keep-alive connection pool of its own to the API's origin (closed with
 * the transport): its `request`, not `fetch`, whose web streams cost the main thread more per page
 * (a plan reads thousands of objects while it works on the manifests). https:// URLs are checked
 * against Node's CA store, with `NODE_EXTRA_CA_CERTS` (README). A long list is read on by a page
 * reader thread (`http-page-reader.ts`, started by `readAhead` once and kept):
 * it asks for each next page the moment the previous one arrives, while this thread is busy
 * planning, instead of when this thread next gets a turn. Until it runs, and if it fails,
 * `ApiClient` reads the pages here, each next page asked for before the page just read is handed
 * on. bench/README.md's history ("Page reader thread") has the figures.
 */
export function httpTransport(baseUrl: string, apiKey: string, opts: HttpTransportOptions = {}): Transport {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const { base, origin, onOrigin } = apiUrls(baseUrl);
  const pool = connectionPool(origin, timeoutMs);
  let closed = false;
  /** The page reader, once a list is long (`readAhead`); none with `readAhead: false`. */
  let reader: WorkerChannel | undefined;
  return {
    target: withoutCredentials(base).replace(/\/+$/, ''),
    readAhead() {
      if (reader || closed || opts.readAhead === false) return;
      const data: PageReaderInput = { base, headers: headers(apiKey, undefined), timeoutMs };
      try {
        reader = new WorkerChannel(startWorker(siblingModule(import.meta.url, 'http-page-reader'), { workerData: data }), 'the page reader');
      } catch {
        // No thread (a sandbox that forbids them): pages are read here.
      }
    },
    readsAhead: () => !closed && !!reader?.ready && reader.usable,
    readPages(path, onPage) {
      const url = onOrigin(path);
      // Refused here: the client reads it itself, and refuses it with its own error.
      if (url === undefined || !reader) return Promise.resolve({ path });
      // Handed back at the first page: as the caller's path (the URL carries the base's credentials, if any).
      return reader.readPages(url, onPage).then((back) => (back?.path === url ? { ...back, path } : back));
    },
    request(method, path, body, extra) {
      const url = onOrigin(path);
      if (url === undefined) {
        const hint = /^https?:\/\//i.test(path) ? ' (a link the API gave names another origin: set EDGEPLANE_PUBLIC_URL on the service to the URL clients use)' : '';
        return Promise.reject(notSent(`refusing to send a request to ${path}: not a path of the API at ${withoutCredentials(base)}${hint}`));
      }
      if (closed) return Promise.reject(notSent(`${method} ${path}: the connection to ${withoutCredentials(base)} was closed`));
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const h = headers(apiKey, body, extra);
      if (payload !== undefined) h['content-length'] = String(Buffer.byteLength(payload));
      // A lost connection is sent again when that is safe (`connection-retry.ts`), within the one deadline.
      const send = (timeLeftMs: number) => exchange(url, { method, pool, headers: h, timeoutMs: timeLeftMs }, payload).catch((err: { code?: string }) => {
        throw err.code === 'EP_TIMEOUT' ? timeoutError(url, timeoutMs) : err;
      });
      return withConnectionRetry(send, { method, headers: h }, { timeoutMs }).then((r) => ({ status: r.status, headers: r.headers, body: parse(r.text) }));
    },
    async close() {
      closed = true;
      // A reader still starting is stopped outright: waiting for it to start only to end it costs a command 100 ms.
      await reader?.close(reader.ready);
      await pool.destroy();
    },
  };
}

