import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport } from '../../src/client/transport.js';

interface Seen { method: string; url: string; headers: IncomingMessage['headers']; body: string }

/** A plain HTTP server that records what it is sent and answers with `reply`. */
async function server(reply: (s: Seen) => { status: number; body: string; type?: string }) {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const closed: Socket[] = [];
  const srv: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const s = { method: req.method!, url: req.url!, headers: req.headers, body };
      seen.push(s);
      const r = reply(s);
      res.writeHead(r.status, { 'content-type': r.type ?? 'application/json', 'x-trace': 'a' });
      res.end(r.body);
    });
  });
  srv.on('connection', (sock) => {
    sockets.add(sock);
    sock.on('close', () => closed.push(sock));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  servers.push(srv);
  return { url, seen, sockets, closed };
}
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** An HTTPS server with a self-signed certificate (test/fixtures/certs); its host:port. */
async function selfSignedServer(): Promise<string> {
  const fixture = (f: string) => readFileSync(new URL(`../fixtures/certs/${f}`, import.meta.url));
  const srv = createHttps({ cert: fixture('leaf.pem'), key: fixture('leaf.key.pem') }, (_req, res) => res.end('{}'));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  servers.push(srv as unknown as Server);
  return `127.0.0.1:${(srv.address() as AddressInfo).port}`;
}

describe('the HTTP transport', () => {
  it('sends the key, the API version and JSON with its length; reads JSON, text, status and headers', async () => {
    const s = await server((r) => (r.url === '/text' ? { status: 503, body: 'busy', type: 'text/plain' } : { status: 201, body: JSON.stringify({ got: JSON.parse(r.body || 'null') }) }));
    const t = httpTransport(s.url + '/', 'key_123');
    try {
      const res = await t.request('POST', '/things', { name: 'é' });
      expect(res).toMatchObject({ status: 201, body: { got: { name: 'é' } } });
      expect(res.headers['x-trace']).toBe('a');
      expect(s.seen[0]).toMatchObject({ method: 'POST', url: '/things' });
      expect(s.seen[0].headers).toMatchObject({ authorization: 'Bearer key_123', 'service-version': '2', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength('{"name":"é"}')) });
      expect(await t.request('GET', '/text')).toMatchObject({ status: 503, body: 'busy' });
      expect(s.seen[1].headers['content-type']).toBeUndefined();
    } finally {
      await t.close();
    }
  });

  it('follows the API\'s own absolute links, and never sends the key to another origin', async () => {
    const api = await server(() => ({ status: 200, body: '{}' }));
    const other = await server(() => ({ status: 200, body: '{}' }));
    const t = httpTransport(api.url, 'key_123');
    try {
      expect((await t.request('GET', `${api.url}/certificate_authorities?before_id=x`)).status).toBe(200);
      expect(api.seen.map((r) => r.url)).toEqual(['/certificate_authorities?before_id=x']);
      await expect(t.request('GET', `${other.url}/certificate_authorities`)).rejects.toThrow(/refusing to send a request to .* not a path of the API/);
      // A path that would name another host after the base (a saved plan is a file anyone may edit).
      const port = new URL(other.url).port;
      for (const path of [`@127.0.0.1:${port}/steal`, `:${port}/steal`, `//127.0.0.1:${port}/steal`, 'certificate_authorities']) {
        await expect(t.request('POST', path, { secret: 'x' }), path).rejects.toThrow(/not a path of the API/);
      }
      expect(other.seen).toEqual([]);
      expect(api.seen).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('keeps the base URL\'s path prefix on the API\'s links (a proxy that strips it), and names EDGEPLANE_PUBLIC_URL when a link leaves the origin', async () => {
    const api = await server(() => ({ status: 200, body: '{}' }));
    const t = httpTransport(`${api.url}/edge-api/`, 'key_123');
    try {
      await t.request('GET', '/certificate_authorities');
      await t.request('GET', `${api.url}/certificate_authorities?before_id=x`);
      await t.request('GET', `${api.url}/edge-api/certificate_authorities?before_id=y`);
      expect(api.seen.map((r) => r.url)).toEqual(['/edge-api/certificate_authorities', '/edge-api/certificate_authorities?before_id=x', '/edge-api/certificate_authorities?before_id=y']);
      await expect(t.request('GET', 'http://10.0.0.1:8080/certificate_authorities?before_id=z')).rejects.toThrow(/another origin: set EDGEPLANE_PUBLIC_URL/);
    } finally {
      await t.close();
    }
  });

  it('keeps its connections alive for the next requests, and closing the transport closes them (a CLI process can exit)', async () => {
    const s = await server(() => ({ status: 200, body: '{"ok":true}' }));
    const t = httpTransport(s.url, 'k');
    // undici takes a connection back for the next request one turn of the event loop after its
    // answer ended: a request sent at once goes on a second one. Ten in a row need no more.
    for (let i = 0; i < 10; i++) await t.request('GET', '/x');
    expect(s.sockets.size).toBeLessThanOrEqual(2);
    expect(s.closed).toEqual([]);
    await t.close();
    await new Promise((r) => setTimeout(r, 100));
    expect(s.closed.length).toBe(s.sockets.size);
  });

  it('rejects when nothing listens (reads are retried by the client; writes by apply)', async () => {
    const s = await server(() => ({ status: 200, body: '{}' }));
    const url = s.url;
    for (const srv of servers.splice(0)) await new Promise((r) => srv.close(r));
    const t = httpTransport(url, 'k');
    try {
      await expect(t.request('GET', '/x')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      // The error names the API it could not reach (`edgeplane plan` prints it as it is).
      await expect(t.request('GET', '/x')).rejects.toThrow(`${new URL(url).origin}: connect ECONNREFUSED`);
    } finally {
      await t.close();
    }
  });

  it('cuts an exchange at the request timeout: no answer, or a body that keeps trickling in', async () => {
    const hole = createServer(() => {}); // takes the request, never answers
    const trickle = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => res.write(' '), 50); // never ends, never pauses long
      res.on('close', () => clearInterval(timer));
    });
    for (const srv of [hole, trickle]) {
      servers.push(srv);
      await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
      const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
      const t = httpTransport(url, 'k', { timeoutMs: 400 });
      try {
        const started = Date.now();
        const err = await t.request('GET', '/certificate_authorities?limit=100').catch((e: Error & { code?: string }) => e);
        expect(err).toMatchObject({ code: 'EP_TIMEOUT', message: `${url}/certificate_authorities: no answer within 0.4 s (the request timeout: --timeout or EDGEPLANE_TIMEOUT)` });
        expect(Date.now() - started).toBeGreaterThanOrEqual(390);
        expect(Date.now() - started).toBeLessThan(2000);
      } finally {
        await t.close();
      }
    }
  });

  it('a connection lost before the answer: a keyed POST or a GET is sent again (same key), an unkeyed POST is not', async () => {
    // Drops the connection of each request's first try, as a killed replica behind a proxy would.
    const tries = new Map<string, number>();
    const drop = createServer((req, res) => {
      const what = `${req.method} ${req.url} ${req.headers['idempotency-key'] ?? '-'}`;
      tries.set(what, (tries.get(what) ?? 0) + 1);
      req.resume();
      req.on('end', () => {
        if (tries.get(what) === 1) return req.socket.destroy();
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end('{"id":"x"}');
      });
    });
    servers.push(drop);
    await new Promise<void>((r) => drop.listen(0, '127.0.0.1', r));
    const t = httpTransport(`http://127.0.0.1:${(drop.address() as AddressInfo).port}`, 'k');
    try {
      expect(await t.request('POST', '/backends/failover', { a: 1 }, { 'Idempotency-Key': 'key-1' })).toMatchObject({ status: 201, body: { id: 'x' } });
      expect(await t.request('GET', '/backends/failover')).toMatchObject({ status: 201 });
      await expect(t.request('POST', '/stack_locks', { a: 1 })).rejects.toMatchObject({ code: expect.stringMatching(/^(UND_ERR_SOCKET|ECONNRESET)$/) });
      expect(Object.fromEntries(tries)).toEqual({ 'POST /backends/failover key-1': 2, 'GET /backends/failover -': 2, 'POST /stack_locks -': 1 });
    } finally {
      await t.close();
    }
  });

  it('says so when an https:// URL reaches a server speaking plain HTTP', async () => {
    const s = await server(() => ({ status: 200, body: '{}' }));
    const t = httpTransport(s.url.replace('http:', 'https:'), 'k');
    try {
      await expect(t.request('GET', '/x')).rejects.toThrow(/does not speak TLS: is it http:\/\/\?\)$/);
    } finally {
      await t.close();
    }
  });

  it('a read through the client is not retried when the certificate is refused: the next try would be refused too', async () => {
    const url = `https://${await selfSignedServer()}`;
    const t = httpTransport(url, 'k');
    let waits = 0;
    const client = new ApiClient(t, { sleep: async () => { waits++; } });
    try {
      await expect(client.getObject('/backends/failover/fbe_x')).rejects.toThrow('self-signed certificate');
      expect(waits).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('an https:// API whose certificate no CA Node trusts signed: the error says how to trust its CA', async () => {
    const url = `https://${await selfSignedServer()}`;
    const t = httpTransport(url, 'k');
    try {
      await expect(t.request('GET', '/x')).rejects.toThrow(`${url}: self-signed certificate (not signed by a CA Node trusts: a private CA goes in NODE_EXTRA_CA_CERTS=/path/ca.pem)`);
    } finally {
      await t.close();
    }
  });

  it('an http:// URL to a port that speaks TLS: the error suggests https://', async () => {
    const host = await selfSignedServer();
    const t = httpTransport(`http://${host}`, 'k');
    try {
      await expect(t.request('GET', '/x')).rejects.toThrow(`(if the server there speaks HTTPS, the URL is https://${host})`);
    } finally {
      await t.close();
    }
  });

  it('an error answer that is not the API\'s (a web server\'s HTML page) is named as such, and cut short', async () => {
    const page = `<!DOCTYPE html>\n<html><body>${'<p>Not here.</p>\n'.repeat(100)}</body></html>`;
    const s = await server(() => ({ status: 404, body: page, type: 'text/html' }));
    const client = new ApiClient(httpTransport(s.url, 'k'));
    try {
      const err = await client.send('GET', '/backends/failover').catch((e: Error) => e);
      expect((err as Error).message).toMatch(/^GET \/backends\/failover → 404: not an edgeplane API error \(is the API URL right\?\): <!DOCTYPE html> <html><body><p>Not here.<\/p>/);
      expect((err as Error).message.length).toBeLessThan(300);
    } finally {
      await client.close();
    }
  });
});
