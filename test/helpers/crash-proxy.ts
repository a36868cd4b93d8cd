import { Agent, createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A replica behind the proxy; `alive: false` takes it out of the rotation (it was killed). */
export interface Backend { url: string; alive: boolean }

/** A request the proxy forwarded and the answer it got, whole, before the client gets it. */
export interface Answered {
  method: string;
  path: string;
  /** The request's `Idempotency-Key`, if any. */
  key?: string;
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  backend: Backend;
}

export interface CrashProxy {
  url: string;
  backends: Backend[];
  /** Every answer forwarded or dropped, in order. */
  answered: Answered[];
  close(): Promise<void>;
}

/**
 * An HTTP proxy in front of `serve` replicas, as a load balancer would stand there: each request
 * goes to the next live replica (round robin), keeping its Host. Each answer is read whole, then
 * `onAnswer` decides: `pass` sends it on; `drop` destroys the client's connection instead, so the
 * client never gets the answer (what a client sees when the replica that committed a write dies
 * before its answer is out). A request whose replica fails meanwhile loses its connection the
 * same way. Test code only: the product has no fault injection.
 */
export async function startCrashProxy(urls: string[], onAnswer: (a: Answered) => 'pass' | 'drop' = () => 'pass'): Promise<CrashProxy> {
  const backends: Backend[] = urls.map((url) => ({ url, alive: true }));
  const answered: Answered[] = [];
  const agent = new Agent({ keepAlive: true });
  const sockets = new Set<Socket>();
  let next = 0;
  const server = createServer((req, res) => {
    const live = backends.filter((b) => b.alive);
    if (!live.length) return req.socket.destroy();
    const backend = live[next++ % live.length];
    const key = req.headers['idempotency-key'];
    const up = request(backend.url + req.url, { method: req.method, headers: req.headers, agent }, (upRes) => {
      const chunks: Buffer[] = [];
      upRes.on('data', (c: Buffer) => chunks.push(c));
      upRes.on('error', () => req.socket.destroy());
      upRes.on('end', () => {
        const a: Answered = {
          method: req.method!, path: req.url!, key: typeof key === 'string' ? key : undefined,
          status: upRes.statusCode!, headers: upRes.headers, body: Buffer.concat(chunks).toString('utf8'), backend,
        };
        answered.push(a);
        if (onAnswer(a) === 'drop') return req.socket.destroy();
        res.writeHead(a.status, upRes.headers);
        res.end(a.body);
      });
    });
    // The replica went away with the request (or refused it): the client's connection goes too.
    up.on('error', () => req.socket.destroy());
    req.pipe(up);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    backends,
    answered,
    async close() {
      for (const s of sockets) s.destroy();
      agent.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
