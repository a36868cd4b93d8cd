import type { ServerResponse } from 'node:http';
import type { Server, Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import type { FastifyInstance } from 'fastify';

/** In the reserve, a new connection is taken only from an address holding fewer than this many. */
export const RESERVE_PER_ADDRESS = 8;

export interface ConnectionCaps {
  /** Connections open at once from one client address (0: no such limit). */
  perAddress: number;
  /**
   * Connections from one address with no request in flight (0: no such limit): still in the TLS
   * handshake or the request's headers, or idle between two requests.
   */
  waitingPerAddress: number;
  /** The server's `maxConnections` (Node closes a connection past it before anyone sees it). */
  maxConnections: number;
  /** The last this many of `maxConnections` go only to addresses holding fewer than `RESERVE_PER_ADDRESS` (0: no reserve). */
  reserve: number;
}

/**
 * The connections one address holds: how many, and its HTTP sockets (the TLS socket in HTTPS, once
 * its handshake is done). Which of them have a request in flight is read when it matters (a new
 * connection from an address holding many), not tracked per request: a request costs nothing here.
 */
interface AddressUse { open: number; sockets: Set<Socket> }

/** A socket of Node's HTTP server has a request in flight while a response is assigned to it (headers received, response not ended). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null };
const inFlight = (socket: Socket) => !!(socket as HttpSocket)._httpMessage;

/**
 * Connections refused since start, by the cap that refused them (the metric
 * `edgeplane_connections_refused_total{reason}`; counted here as plain numbers, read at scrape time):
 * - `per_address`: the address already held `perAddress` connections;
 * - `headers`: the address already held `waitingPerAddress` connections with no request in flight;
 * - `global`: `maxConnections` reached (Node drops it), or the reserve kept for addresses holding few.
 */
export interface RefusedConnections { per_address: number; headers: number; global: number }

/**
 * Connection hygiene of `serve` (docs/operations.md), counted per client address:
 * - at most `perAddress` connections open at once from one address;
 * - at most `waitingPerAddress` of them with no request in flight (half-sent headers, a TLS
 *   handshake not finished, idle keep-alives): a pooled client opens a new connection only when
 *   its others are busy, so it never meets this cap, while one host holding half-sent requests
 *   does, long before the per-address cap;
 * - the last `reserve` slots of `maxConnections` only for addresses holding fewer than
 *   `RESERVE_PER_ADDRESS`, so many addresses holding many connections each still leave room for
 *   a client that holds few;
 * and, once the app closes, idle keep-alive connections closed as soon as they are idle (a
 * connection whose request finished after the drain began would otherwise be held open until its
 * keep-alive timeout, past the shutdown timeout: exit 1).
 *
 * A connection over a cap is destroyed before anything is read from it (the client sees a reset).
 */
export function guardConnections(app: FastifyInstance, caps: ConnectionCaps): RefusedConnections {
  const server = app.server as Server;
  const byAddress = new Map<string, AddressUse>();
  const counts: RefusedConnections = { per_address: 0, headers: 0, global: 0 };
  let total = 0;
  /** The cap a new connection from an address holding `use` is over, if any. */
  const refusal = (use: AddressUse | undefined): keyof RefusedConnections | null => {
    if (!use) return null; // an address holding none is under every cap
    if (caps.perAddress > 0 && use.open >= caps.perAddress) return 'per_address';
    if (caps.waitingPerAddress > 0 && use.open >= caps.waitingPerAddress) {
      let busy = 0;
      for (const s of use.sockets) if (inFlight(s)) busy++;
      if (use.open - busy >= caps.waitingPerAddress) return 'headers';
    }
    return caps.reserve > 0 && use.open >= RESERVE_PER_ADDRESS && total >= caps.maxConnections - caps.reserve ? 'global' : null;
  };
  // Past `maxConnections`, Node closes the connection itself, before any 'connection' event.
  server.on('drop', () => { counts.global++; });
  // Before Node's own listener: a connection over a cap is closed before anything is read from it.
  server.prependListener('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    let use = byAddress.get(address);
    const reason = refusal(use);
    if (reason) {
      counts[reason]++;
      socket.destroy();
      return;
    }
    if (!use) byAddress.set(address, (use = { open: 0, sockets: new Set() }));
    use.open++;
    total++;
    socket.once('close', () => {
      total--;
      use.open--;
      if (use.open === 0) byAddress.delete(address);
    });
  });

  // The HTTP sockets, by address. Once the app closes, one with no request in flight is closed
  // (idle, or still sending headers: no request of it was accepted), and one with a request is
  // closed once its response ends.
  let closing = false;
  const tracked = (socket: Socket) => {
    if (socket.destroyed) return; // refused above
    if (closing) {
      socket.destroy();
      return;
    }
    const use = byAddress.get(socket.remoteAddress ?? '');
    if (!use) return;
    use.sockets.add(socket);
    socket.once('close', () => use.sockets.delete(socket));
  };
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', tracked);
  /** Closes `socket` once no response is assigned to it (the one in flight, then any pipelined after it). */
  const closeWhenAnswered = (socket: HttpSocket) => {
    const res = socket._httpMessage;
    if (!res) socket.destroySoon();
    else res.once('close', () => closeWhenAnswered(socket));
  };
  app.addHook('preClose', (done) => {
    closing = true;
    for (const use of byAddress.values()) {
      for (const socket of use.sockets) {
        if (inFlight(socket)) closeWhenAnswered(socket);
        else socket.destroy();
      }
    }
    done();
  });
  return counts;
}
