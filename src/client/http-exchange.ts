// One HTTP exchange with `node:http` / `node:https`, the body kept as text: shared by the HTTP
// transport (transport.ts) and its page reader thread (page-reader.ts).
import http from 'node:http';
import https from 'node:https';

export interface Exchanged { status: number; headers: Record<string, string>; text: string }

/** A keep-alive agent for the origin's scheme: one per transport, and one for its page reader. */
export function keepAliveAgent(origin: string): http.Agent {
  return origin.startsWith('https:') ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
}

/** Sends `payload` (or nothing) to `url`; resolves with the status, the headers (repeated ones joined) and the body's text. */
export function exchange(url: string, { method, agent, headers }: { method: string; agent: http.Agent; headers: Record<string, string> }, payload?: string): Promise<Exchanged> {
  return new Promise((resolve, reject) => {
    const req = (url.startsWith('https:') ? https : http).request(url, { method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const h: Record<string, string> = {};
        for (const k in res.headers) {
          const v = res.headers[k];
          if (v !== undefined) h[k] = Array.isArray(v) ? v.join(', ') : v;
        }
        resolve({ status: res.statusCode ?? 0, headers: h, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    // A network error says which API it was (its origin, never a header): `connect ECONNREFUSED`
    // alone does not. Its code stays, for the retries that read it.
    req.on('error', (err: NodeJS.ErrnoException) => {
      // https:// to a port that speaks plain HTTP: OpenSSL's "wrong version number" says only that.
      const hint = err.code === 'EPROTO' && /wrong version number/.test(err.message) ? ' (the server there does not speak TLS: is it http://?)' : '';
      reject(Object.assign(err, { message: `${new URL(url).origin}: ${err.message.trimEnd()}${hint}` }));
    });
    req.end(payload);
  });
}
