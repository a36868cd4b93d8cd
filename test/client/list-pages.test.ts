import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient, ApiRequestError, READ_AHEAD_AFTER } from '../../src/client/api-client.js';
import { httpTransport, type Transport } from '../../src/client/transport.js';
import { kindByName } from '../../src/kinds/registry.js';

/**
 * A list endpoint on a thread of its own, so that it answers while this thread is busy (as a real
 * deployment does): `/backends/failover` in pages of `per` from `total` objects, with `before_id`
 * links; `script` lists answers to give instead, in order, to the requests whose URL contains their
 * `match` (`status`, `body`; `"SELF"` in it is this list's first page after the opening one;
 * `BASE` in it or in a `link` header given is the server's origin; `hang`: no answer). Every request is recorded with the time
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
    if (s.hang) return; // never answered
    const origin = 'http://127.0.0.1:' + srv.address().port;
    res.writeHead(s.status, { 'content-type': 'application/json', 'retry-after': '0', ...(s.link ? { link: s.link.replace('BASE', origin) } : {}) });
    const self = origin + '/backends/failover?before_id=0&limit=10';
    return res.end(JSON.stringify(s.body).replace('"SELF"', JSON.stringify(self)).replace('BASE', origin));
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
interface Script { match: string; status: number; body: unknown; link?: string; hang?: boolean }

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

describe('list pages over HTTP', () => {
  it('asks for each next page before the page just read is handed on: it reaches the server while this thread is busy with that page', async () => {
    // The server counts the requests it gets in shared memory. This thread, busy with a page,
    // waits on that count without ever yielding to its event loop: only a request already sent
    // when the page was handed on can raise it meanwhile (the deadline is only a bound). The
    // first list opens the connections (undici takes one back a turn after its answer ended, so
    // the next page goes on a second one); the second list is the one watched.
    const counter = new SharedArrayBuffer(4);
    const arrived = new Int32Array(counter);
    const s = await listServer(30, 10, [], counter);
    const t = httpTransport(s.url, 'key_1', { readAhead: false });
    try {
      const client = new ApiClient(t);
      expect(await client.list(backends)).toHaveLength(30);
      const before = Atomics.load(arrived, 0);
      const seenWhileBusy: number[] = [];
      const pages: number[] = [];
      const all = await client.list(backends, undefined, (items) => {
        pages.push(items.length);
        const want = before + pages.length + 1;
        const deadline = Date.now() + 3_000;
        while (pages.length < 3 && Atomics.load(arrived, 0) < want && Date.now() < deadline) Atomics.wait(arrived, 0, Atomics.load(arrived, 0), 50);
        seenWhileBusy.push(Atomics.load(arrived, 0) - before);
      });
      expect(all.map((o) => o.id)).toEqual(Array.from({ length: 30 }, (_, i) => `fo_${i}`));
      expect(pages).toEqual([10, 10, 10]);
      expect(client.counts).toEqual({ GET: 6 });
      // Busy with page 1, page 2 had been asked for; busy with page 2, page 3.
      expect(seenWhileBusy).toEqual([2, 3, 3]);
      const { seen } = await s.report();
      expect(seen.slice(3).map((r) => r.url)).toEqual(['/backends/failover?limit=100', '/backends/failover?before_id=10&limit=10', '/backends/failover?before_id=20&limit=10']);
      expect(seen.every((r) => r.auth === 'Bearer key_1' && r.version === '2')).toBe(true);
    } finally {
      await t.close();
    }
  });

});

/**
 * The HTTP transport reading pages here (`readAhead: false`), or its page reader thread, started
 * and running before the list is read (as it is once a list has shown a second page).
 */
async function transportFor(url: string, key: string, how: 'here' | 'reader', make = httpTransport): Promise<Transport> {
  if (how === 'here') return make(url, key, { readAhead: false });
  const t = make(url, key);
  t.readAhead!();
  for (const until = Date.now() + 20_000; !t.readsAhead!(); await new Promise((r) => setTimeout(r, 10))) {
    if (Date.now() > until) throw new Error('the page reader did not start');
  }
  return t;
}

describe.each([['on this thread', 'here'], ['by the page reader', 'reader']] as const)('list pages over HTTP, read %s', (_, how) => {
  it('a page answered 503 is read again with the client\'s retries, and the list goes on from there', async () => {
    const s = await listServer(25, 10, [{ match: 'before_id=10', status: 503, body: { error_code: 'ERR_BUSY', msg: 'busy' } }]);
    const t = await transportFor(s.url, 'k', how);
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

  it('a page refused (401) is an API error naming it, asked once', async () => {
    const s = await listServer(25, 10, [{ match: 'before_id=10', status: 401, body: { error_code: 'ERR_UNAUTHORIZED', status_code: 401, msg: 'no' } }]);
    const t = await transportFor(s.url, 'k', how);
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

  it('never follows a next link to another origin: the client refuses it, and the other server gets nothing', async () => {
    const other = await listServer(5, 10);
    const s = await listServer(25, 10, [{ match: 'before_id=10', status: 200, body: { backends: [{ id: 'fo_a' }], next_page_uri: `${other.url}/backends/failover?before_id=a&limit=100` } }]);
    const t = await transportFor(s.url, 'key_secret', how);
    try {
      const client = new ApiClient(t, { sleep: async () => {} });
      await expect(client.list(backends)).rejects.toThrow(/refusing to send a request to .* not a path of the API/);
      expect(client.counts).toEqual({ GET: 3 }); // two pages, and the refused link asked for once
      expect((await other.report()).seen).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it('stops at an empty page, as the client reads one (its next link is not followed)', async () => {
    const s = await listServer(5, 10, [{ match: 'limit=100', status: 200, body: { backends: [], next_page_uri: 'SELF' } }]);
    const t = await transportFor(s.url, 'k', how);
    try {
      const client = new ApiClient(t);
      expect(await client.list(backends)).toEqual([]);
      expect(client.counts).toEqual({ GET: 1 });
      // The reader may have asked for the link before the client stopped it: never further.
      expect((await s.report()).seen.length).toBeLessThanOrEqual(how === 'reader' ? 2 : 1);
    } finally {
      await t.close();
    }
  });

  it('closing the transport closes its connections (a CLI process can exit)', async () => {
    const s = await listServer(15, 10);
    const t = await transportFor(s.url, 'k', how);
    expect(await new ApiClient(t).list(backends)).toHaveLength(15);
    const { sockets } = await s.report();
    expect(sockets).toBeGreaterThan(0);
    await t.close();
    await new Promise((r) => setTimeout(r, 100));
    expect((await s.report()).closed).toBe(sockets);
  });
});

describe('the HTTP page reader', () => {
  it(`starts for a list that goes on past ${READ_AHEAD_AFTER} pages, not for a shorter one`, async () => {
    const short = await listServer(READ_AHEAD_AFTER * 10, 10);
    const long = await listServer((READ_AHEAD_AFTER + 2) * 10, 10);
    const started: string[] = [];
    const watched = (url: string) => {
      const t = httpTransport(url, 'k');
      const start = t.readAhead!.bind(t);
      t.readAhead = () => { started.push(url); start(); };
      return t;
    };
    const [a, b] = [watched(short.url), watched(long.url)];
    try {
      expect(await new ApiClient(a).list(backends)).toHaveLength(READ_AHEAD_AFTER * 10);
      expect(started).toEqual([]);
      expect(await new ApiClient(b).list(backends)).toHaveLength((READ_AHEAD_AFTER + 2) * 10);
      expect(started[0]).toBe(long.url);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a page that takes longer than the request timeout fails the list once: it is not asked for again', async () => {
    const s = await listServer(50, 10, [{ match: 'before_id=20', status: 200, body: {}, hang: true }]);
    const t = await transportFor(s.url, 'k', 'reader', (url, key) => httpTransport(url, key, { timeoutMs: 500 }));
    try {
      const client = new ApiClient(t, { sleep: async () => {} });
      const err = await client.list(backends).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'EP_TIMEOUT' });
      expect((err as Error).message).toMatch(/no answer within 0.5 s/);
      expect((await s.report()).seen.filter((r) => r.url.includes('before_id=20'))).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('a base URL with credentials: a page handed back is named by its path, never by that URL', async () => {
    const s = await listServer(25, 10, [{ match: 'limit=100', status: 401, body: { error_code: 'ERR_UNAUTHORIZED', status_code: 401, msg: 'no' } }]);
    const withCredentials = s.url.replace('http://', 'http://proxyuser:TOPSECRET@');
    const t = await transportFor(withCredentials, 'k', 'reader');
    try {
      const err = await new ApiClient(t).list(backends).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiRequestError);
      expect((err as Error).message).not.toContain('TOPSECRET');
      expect(err).toMatchObject({ status: 401, path: '/backends/failover?limit=100' });
    } finally {
      await t.close();
    }
  });

  it('once the list has failed, no later page is handed on', async () => {
    // The first page is answered 503 to the reader: the client reads it itself, hands the rest to
    // the reader, and then the caller fails on that first page.
    const s = await listServer(60, 10, [{ match: 'limit=100', status: 503, body: { error_code: 'ERR_BUSY', msg: 'busy' } }]);
    const t = await transportFor(s.url, 'k', 'reader');
    try {
      let calls = 0;
      const err = await new ApiClient(t, { sleep: async () => {} }).list(backends, undefined, () => { calls++; throw new Error('the caller gave up'); }).catch((e: unknown) => e);
      expect((err as Error).message).toBe('the caller gave up');
      await new Promise((r) => setTimeout(r, 500)); // the reader's later pages, if it were still handing them on
      expect(calls).toBe(1);
    } finally {
      await t.close();
    }
  });

  it('reads the next link the page itself gives, when a Link header says otherwise', async () => {
    const s = await listServer(30, 10, [{
      match: 'limit=100', status: 200, link: '<BASE/backends/failover?before_id=0&limit=10>; rel="next"',
      body: { backends: [{ id: 'fo_first' }], next_page_uri: 'BASE/backends/failover?before_id=20&limit=10' },
    }]);
    const t = await transportFor(s.url, 'k', 'reader');
    try {
      const client = new ApiClient(t);
      const all = await client.list(backends);
      expect(all.map((o) => o.id)).toEqual(['fo_first', ...Array.from({ length: 10 }, (_, i) => `fo_${20 + i}`)]);
      expect(client.counts).toEqual({ GET: 2 });
    } finally {
      await t.close();
    }
  });

  it.each([
    ['spelt otherwise than the page\'s own next link (the same URL)', '<BASE/backends/./failover?before_id=10&limit=10>; rel="next"', ''],
    ['relative, with credentials in the base URL', '</backends/failover?before_id=10&limit=10>; rel="next"', 'proxyuser:TOPSECRET@'],
  ])('a Link %s is followed, each page asked for once', async (_, link, credentials) => {
    const s = await listServer(30, 10, [{
      match: 'limit=100', status: 200, link,
      body: { backends: Array.from({ length: 10 }, (_, i) => ({ id: `fo_${i}` })), next_page_uri: 'BASE/backends/failover?before_id=10&limit=10' },
    }]);
    const t = await transportFor(s.url.replace('http://', `http://${credentials}`), 'k', 'reader');
    try {
      const client = new ApiClient(t);
      expect((await client.list(backends)).map((o) => o.id)).toEqual(Array.from({ length: 30 }, (_, i) => `fo_${i}`));
      expect(client.counts).toEqual({ GET: 3 });
      expect((await s.report()).seen.map((r) => r.url)).toEqual(['/backends/failover?limit=100', '/backends/failover?before_id=10&limit=10', '/backends/failover?before_id=20&limit=10']);
    } finally {
      await t.close();
    }
  });

  it('runs from the compiled package (dist/), as the installed CLI starts it', async () => {
    const compiled = (await import(new URL('../../dist/client/transport.js', import.meta.url).href)) as { httpTransport: typeof httpTransport };
    const s = await listServer(25, 10);
    const t = await transportFor(s.url, 'k', 'reader', compiled.httpTransport);
    try {
      const client = new ApiClient(t);
      expect(await client.list(backends)).toHaveLength(25);
      expect(client.counts).toEqual({ GET: 3 });
    } finally {
      await t.close();
    }
  });

  it('asks for every next page while this thread is busy with the first one', async () => {
    // This thread, handed page 1, waits on the server's count of requests without yielding to its
    // event loop: only another thread can ask for pages 2 to 5 meanwhile.
    const counter = new SharedArrayBuffer(4);
    const arrived = new Int32Array(counter);
    const s = await listServer(50, 10, [], counter);
    const t = await transportFor(s.url, 'key_1', 'reader');
    try {
      const client = new ApiClient(t);
      const before = Atomics.load(arrived, 0);
      let seenWhileBusy = -1;
      const all = await client.list(backends, undefined, () => {
        if (seenWhileBusy >= 0) return;
        const deadline = Date.now() + 10_000;
        while (Atomics.load(arrived, 0) - before < 5 && Date.now() < deadline) Atomics.wait(arrived, 0, Atomics.load(arrived, 0), 50);
        seenWhileBusy = Atomics.load(arrived, 0) - before;
      });
      expect(all.map((o) => o.id)).toEqual(Array.from({ length: 50 }, (_, i) => `fo_${i}`));
      expect(seenWhileBusy).toBe(5);
      expect(client.counts).toEqual({ GET: 5 });
      const { seen } = await s.report();
      expect(seen.every((r) => r.auth === 'Bearer key_1' && r.version === '2')).toBe(true);
    } finally {
      await t.close();
    }
  });
});
