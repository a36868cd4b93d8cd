import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server, Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import type { FastifyInstance } from 'fastify';

/**
 * Connection hygiene of `serve` (docs/operations.md): at most `perAddress` connections open at once
 * from one client address (0: no such limit), so one host holding half-sent requests or idle TLS
 * handshakes cannot take every slot of the global `maxConnections`; and, once the app closes, idle
 * keep-alive connections closed as soon as they are idle (a connection whose request finished
 * after the drain began would otherwise be held open until its keep-alive timeout, past the
 * shutdown timeout: exit 1).
 */
export function guardConnections(app: FastifyInstance, opts: { perAddress: number }): void {
  const server = app.server as Server;
  if (opts.perAddress > 0) {
    const open = new Map<string, number>();
    // Before Node's own listener: a connection over the cap is closed before anything is read from it.
    server.prependListener('connection', (socket) => {
      const address = socket.remoteAddress ?? '';
      const n = (open.get(address) ?? 0) + 1;
      if (n > opts.perAddress) {
        socket.destroy();
        return;
      }
      open.set(address, n);
      socket.once('close', () => {
        const left = (open.get(address) ?? 1) - 1;
        if (left > 0) open.set(address, left);
        else open.delete(address);
      });
    });
  }
  // Connections and how many requests each has in flight (headers received, response not ended):
  // once the app closes, one with none is closed (idle, or still sending headers: no request of it
  // was accepted), and one with a request is closed once its response ends.
  const inFlight = new Map<Socket, number>();
  let closing = false;
  const tracked = (socket: Socket) => {
    if (closing) {
      socket.destroy();
      return;
    }
    inFlight.set(socket, 0);
    socket.once('close', () => inFlight.delete(socket));
  };
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', tracked);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    if (!inFlight.has(socket)) return;
    inFlight.set(socket, inFlight.get(socket)! + 1);
    res.once('close', () => {
      const left = (inFlight.get(socket) ?? 1) - 1;
      if (!inFlight.has(socket)) return;
      inFlight.set(socket, left);
      if (closing && left === 0) socket.destroySoon();
    });
  });
  app.addHook('preClose', (done) => {
    closing = true;
    for (const [socket, n] of inFlight) if (n === 0) socket.destroy();
    done();
  });
}
