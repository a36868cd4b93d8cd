// The list-page reader of the HTTP transport (transport.ts `readPages`), on a worker thread of its
// own. It asks for a list's next page the moment the previous one arrives, however busy the main
// thread is with the pages already read (a plan parses, validates and compares thousands of
// objects meanwhile): on the main thread, each of those requests waited for its turn, and the
// pages of a large account came a third slower. Plain JavaScript, so the worker starts without the
// TypeScript loader (a few tens of milliseconds).
//
// Messages in: { id, url } reads a list from `url` on; { cancel: id } stops reading it.
// Messages out, in order per id: { id, url, status, headers, text, next, more } for each response
// (`next`: the page's next link or null; `more`: whether this worker reads it), or { id, url, error }
// when a request failed. A response other than 2xx, a failure, or a link to another origin ends
// the reading here: the main thread reads that URL itself, with the client's retries (or refusal).
import http from 'node:http';
import https from 'node:https';
import { parentPort, workerData } from 'node:worker_threads';
import { exchange } from './http-exchange.mjs';

const { origin, headers } = workerData;
const agent = origin.startsWith('https:') ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
const cancelled = new Set();

const get = (url) => exchange(url, { method: 'GET', agent, headers });

/** The service ends a page with its next link: read from the end, the whole page parsed only when it is not there. */
const TAIL = /"next_page_uri"\s*:\s*(null|"(?:[^"\\]|\\.)*")\s*}\s*$/;

function nextLink(text) {
  const m = TAIL.exec(text.slice(-2048));
  let next;
  if (m) next = JSON.parse(m[1]);
  else {
    try { next = JSON.parse(text).next_page_uri; } catch { next = null; }
  }
  return typeof next === 'string' && next ? next : null;
}

async function readList(id, url) {
  for (;;) {
    if (cancelled.delete(id)) return;
    if (new URL(url).origin !== origin) return void parentPort.postMessage({ id, url, error: `not on ${origin}` });
    let res;
    try {
      res = await get(url);
    } catch (err) {
      parentPort.postMessage({ id, url, error: String(err?.message ?? err) });
      return;
    }
    const next = res.status >= 200 && res.status < 300 ? nextLink(res.text) : null;
    // The key goes to the API's own origin only: a link elsewhere is left to the main thread (which
    // refuses it), as is a link back to the same page.
    const more = next !== null && next !== url && /^https?:\/\//.test(next) && new URL(next).origin === origin;
    parentPort.postMessage({ id, url, status: res.status, headers: res.headers, text: res.text, next, more });
    if (!more) return void cancelled.delete(id);
    url = next;
  }
}

parentPort.on('message', (m) => {
  if (m.cancel !== undefined) cancelled.add(m.cancel);
  else void readList(m.id, m.url);
});
