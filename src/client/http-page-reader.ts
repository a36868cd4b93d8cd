// The HTTP transport's page reader (`httpTransport`, started once a list goes on past
// `READ_AHEAD_AFTER` pages): a thread that reads a list page after page over a connection pool of
// its own, each next page asked for the moment the previous one arrives, however busy the thread
// using the pages is (`page-loop.ts`; the other end is `WorkerChannel`). It sends the key only to
// the API's own origin (`apiUrls`): a link elsewhere fails here, and the using thread, reading that
// page itself, refuses it with its own error.
import { parentPort, workerData } from 'node:worker_threads';
import { apiUrls } from './api-url.js';
import { connectionPool, exchangeWith } from './http-exchange.js';
import { pageLoop, type ListMessage } from './page-loop.js';

export interface PageReaderInput { base: string; headers: Record<string, string>; timeoutMs: number }

const port = parentPort!;
const { base, headers, timeoutMs } = workerData as PageReaderInput;
const urls = apiUrls(base);
const pool = connectionPool(urls.origin, timeoutMs);
const lists = pageLoop((path) => {
  const url = urls.onOrigin(path);
  if (url === undefined) return Promise.reject(new Error(`not a path of the API: ${path}`));
  // The body's bytes move to the planning thread, which decodes them: no copy of the text.
  return exchangeWith(url, { method: 'GET', pool, headers, timeoutMs }, undefined, (body) => body.arrayBuffer()).then(({ body, ...rest }) => ({ ...rest, bytes: body }));
}, (m, transfer) => port.postMessage(m, transfer));
port.on('message', (m: ListMessage | { close: true }) => {
  if ('close' in m) void pool.destroy().finally(() => port.close());
  else lists(m);
});
port.postMessage({ ready: true });
