// The list-page reader of the HTTP transport (transport.ts `readPages`), on a worker thread of its
// own (see page-loop.ts). It asks for a list's next page the moment the previous one arrives,
// however busy the main thread is with the pages already read (a plan parses, validates and
// compares thousands of objects meanwhile): on the main thread, each of those requests waited for
// its turn, and the pages of a large account came slower.
import { parentPort, workerData } from 'node:worker_threads';
import { connectionPool, exchange } from './http-exchange.js';
import { pageLoop, type ListMessage } from './page-loop.js';

const { origin, headers, timeoutMs } = workerData as { origin: string; headers: Record<string, string>; timeoutMs: number };
const pool = connectionPool(origin, timeoutMs);

const get = (url: string) => exchange(url, { method: 'GET', pool, headers, timeoutMs });

/** The key goes to the API's own origin only: a link elsewhere is the main thread's to refuse. */
const follows = (url: string) => /^https?:\/\//.test(url) && new URL(url).origin === origin;

const port = parentPort!;
const onList = pageLoop(get, follows, (m) => port.postMessage(m));
port.on('message', (m: ListMessage) => onList(m));
