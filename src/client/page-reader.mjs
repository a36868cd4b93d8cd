// The list-page reader of the HTTP transport (transport.ts `readPages`), on a worker thread of its
// own (see page-loop.mjs). It asks for a list's next page the moment the previous one arrives,
// however busy the main thread is with the pages already read (a plan parses, validates and
// compares thousands of objects meanwhile): on the main thread, each of those requests waited for
// its turn, and the pages of a large account came a third slower. Plain JavaScript, so the worker
// starts without the TypeScript loader (a few tens of milliseconds).
import { parentPort, workerData } from 'node:worker_threads';
import { exchange, keepAliveAgent } from './http-exchange.mjs';
import { pageLoop } from './page-loop.mjs';

const { origin, headers } = workerData;
const agent = keepAliveAgent(origin);

const get = (url) => exchange(url, { method: 'GET', agent, headers });

/** The key goes to the API's own origin only: a link elsewhere is the main thread's to refuse. */
const follows = (url) => /^https?:\/\//.test(url) && new URL(url).origin === origin;

parentPort.on('message', pageLoop(get, follows, (m) => parentPort.postMessage(m)));
