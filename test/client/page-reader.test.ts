import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient, ApiRequestError } from '../../src/client/api-client.js';
import { httpTransport, type Transport } from '../../src/client/transport.js';
import { kindByName } from '../../src/kinds/registry.js';

/**
 * A list endpoint on a thread of its own, so that it answers while this thread is busy (as a real
 * deployment does): `/backends/failover` in pages of `per` from `total` objects, with `before_id`
 * links; `script` lists answers to give instead, in order, to the requests whose URL contains their
 * `match` (`status`, `body`; `"SELF"` in it is this list's first page after the opening one). Every request is recorded with the time
 * (epoch ms) it arrived and whether its connection was new.
 */
const SERVER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { total, per, script, counter } = workerData;
const arrived = counter ? new Int32Array(counter) : null;
const seen = [];
let sockets = 0, closed = 0;
const srv = http.createServer((req, res) => {
  seen.push({ url: req.url, at: performance.timeOrigin + performance.now(), auth: req.headers.authorization, version: req.headers['service-version'] });
  if (arrived) { Atomics.add(arrived, 0, 1); Atomics.notify(arrived, 0); }
  const u = new URL(req.url, 'http://x');
  const i = script.findIndex((s) => req.url.includes(s.match));
  if (i >= 0) {
    const s = script.splice(i, 1)[0];
    res.writeHead(s.status, { 'content-type': 'application/json', 'retry-after': '0' });
    const self = 'http://127.0.0.1:' + srv.address().port + '/backends/failover?before_id=0&limit=10';
    return res.end(JSON.stringify(s.body).replace('"SELF"', JSON.stringify(self)));
  }
  const from = Number(u.searchParams.get('before_id') ?? 0);
  const ids = Array.from({ length: Math.max(0, Math.min(per, total - from)) }, (_, k) => ({ id: 'fo_' + (from + k) }));
  const base = 'http://127.0.0.1:' + srv.address().port + '/backends/failover';
  const next = from + per < total ? base + '?before_id=' + (from + per) + '&limit=' + per : null;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ backends: ids, uri: base, next_page_uri: next }));
});
srv.on('connection', (s) => { sockets++; s.on('close', () => closed++); });
srv.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: srv.address().port }));
parentPort.on('message', (m) => {
  if (m === 'seen') parentPort.postMessage({ seen, sockets, closed });
  if (m === 'stop') { srv.closeAllConnections(); srv.close(() => process.exit(0)); }
});
`;

interface Seen { url: string; at: number; auth: string; version: string }
interface Script { match: string; status: number; body: unknown }

const running: Worker[] = [];
afterEach(async () => {
  for (const w of running.splice(0)) await w.terminate();
});

async function listServer(total: number, per: number, script: Script[] = [], counter?: SharedArrayBuffer) {
  const w = new Worker(SERVER, { eval: true, workerData: { total, per, script, counter } });
  running.push(w);
  const { port } = await new Promise<{ port: number }>((r) => w.once('message', r));
  const report = () => new Promise<{ seen: Seen[]; sockets: number; closed: number }>((r) => { w.once('message', r); w.postMessage('seen'); });
  return { url: `http://127.0.0.1:${port}`, report };
}

const backends = kindByName('failoverBackend');

describe('list pages read ahead on the transport\'s reader thread', () => {
  it('asks for every next page while this thread is busy with the first one', async () => {
    // The server counts the requests it gets in shared memory; this thread, busy with the first
    // page, waits on that count without ever yielding to its event loop. Only a reader on a
    // thread of its own can bring the count to three meanwhile (the deadline is only a bound).
    const counter = new SharedArrayBuffer(4);
    const arrived = new Int32Array(counter);
    const s = await listServer(30, 10, [], counter);
    const t = httpTransport(s.url, 'key_1');
    try {
      const client = new ApiClient(t);
      let seenWhileBusy = 0;
      const pages: number[] = [];
      const all = await client.list(backends, undefined, (items) => {
        pages.push(items.length);
        if (pages.length === 1) {
          const deadline = Date.now() + 30_000;
          while (Atomics.load(arrived, 0) < 3 && Date.now() < deadline) Atomics.wait(arrived, 0, Atomics.load(arrived, 0), 50);
          seenWhileBusy = Atomics.load(arrived, 0);
        }
      });
      expect(all.map((o) => o.id)).toEqual(Array.from({ length: 30 }, (_, i) => `fo_${i}`));
      expect(pages).toEqual([10, 10, 10]);
      expect(client.counts).toEqual({ GET: 3 });
      const { seen } = await s.report();
      expect(seen.map((r) => r.url)).toEqual(['/backends/failover?limit=100', '/backends/failover?before_id=10&limit=10', '/backends/failover?before_id=20&limit=10']);
      // Read one after another from this thread, the third page would be asked for only once the
      // second was handed on, after the first had been.
      expect(seenWhileBusy).toBe(3);
      expect(seen.every((r) => r.auth === 'Bearer key_1' && r.version === '2')).toBe(true);
    } finally {
      await t.close();
    }
  });

  it('a page answered 503 is read again with the client\'s retries, and the list goes on from there', async () => {
    const s = await listServer(25, 10, [{ match: 'before_id=10', status: 503, body: { error_code: 'ERR_BUSY', msg: 'busy' } }]);
    const t = httpTransport(s.url, 'k');
    try {
      const client = new ApiClient(t, { sleep: async () => {} });
      const all = await client.list(backends);
      expect(all).toHaveLength(25);
      expect(new Set(all.map((o) => o.id)).size).toBe(25);
      expect(client.counts).toEqual({ GET: 4 });
      expect((await s.report()).seen.map((r) => r.url)).toEqual([
        '/backends/failover?limit=100', '/backends/failover?before_id=10&limit=10',
        '/backends/failover?before_id=10&limit=10', '/backends/failover?before_id=20&limit=10',
      ]);
    } finally {
      await t.close();
    }
  });

  it('a page the reader is refused is an API error naming it, asked once (not again from this thread)', async () => {
    const s = await listServer(25, 10, [{ match: 'before_id=10', status: 401, body: { error_code: 'ERR_UNAUTHORIZED', status_code: 401, msg: 'no' } }]);
    const t = httpTransport(s.url, 'k');
    try {
      const client = new ApiClient(t);
      const err = await client.list(backends).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiRequestError);
      expect(err).toMatchObject({ status: 401, code: 'ERR_UNAUTHORIZED', path: `${s.url}/backends/failover?before_id=10&limit=10` });
      expect(client.counts).toEqual({ GET: 2 });
      expect((await s.report()).seen).toHaveLength(2);
    } finally {
      await t.close();
    }
  });

  it('a list of one page is read without starting the reader', async () => {
    const s = await listServer(7, 10);
    const t = httpTransport(s.url, 'k');
    try {
      const client = new ApiClient(t);
      expect(await client.list(backends)).toHaveLength(7);
      expect(await client.list(backends)).toHaveLength(7);
      expect((await s.report()).sockets).toBe(1); // this thread's one kept-alive connection, no reader's
    } finally {
      await t.close();
    }
  });

  it('never follows a next link to another origin: the client refuses it, and the other server gets nothing', async () => {
    const other = await listServer(5, 10);
    const s = await listServer(25, 10, [{ match: 'before_id=10', status: 200, body: { backends: [{ id: 'fo_a' }], next_page_uri: `${other.url}/backends/failover?before_id=a&limit=100` } }]);
    const t = httpTransport(s.url, 'key_secret');
    try {
      await expect(new ApiClient(t, { sleep: async () => {} }).list(backends)).rejects.toThrow(/refusing to send a request to .* not a path of the API/);
      expect((await other.report()).seen).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it('stops at an empty page, as the client reads one (its next link is not followed)', async () => {
    const s = await listServer(5, 10, [{ match: 'limit=100', status: 200, body: { backends: [], next_page_uri: 'SELF' } }]);
    const t = httpTransport(s.url, 'k');
    try {
      const client = new ApiClient(t);
      expect(await client.list(backends)).toEqual([]);
      expect(client.counts).toEqual({ GET: 1 });
      expect((await s.report()).seen).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('closing the transport ends the reader and its connection (a CLI process can exit)', async () => {
    const s = await listServer(15, 10);
    const t = httpTransport(s.url, 'k');
    expect(await new ApiClient(t).list(backends)).toHaveLength(15);
    expect((await s.report()).sockets).toBe(2); // the first page on this thread's connection, the second on the reader's
    await t.close();
    await new Promise((r) => setTimeout(r, 100));
    expect((await s.report()).closed).toBe(2);
  });

  it('a transport without a reader is read page after page by the client, with the same result', async () => {
    const s = await listServer(25, 10);
    const http = httpTransport(s.url, 'k');
    const plain: Transport = { target: http.target, request: http.request, close: http.close };
    try {
      const client = new ApiClient(plain);
      expect((await client.list(backends)).map((o) => o.id)).toEqual((await new ApiClient(http).list(backends)).map((o) => o.id));
      expect(client.counts).toEqual({ GET: 3 });
    } finally {
      await http.close();
    }
  });
});
