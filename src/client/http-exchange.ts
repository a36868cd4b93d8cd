// One HTTP exchange with `node:http` / `node:https`, the body kept as text: shared by the HTTP
// transport (transport.ts) and its page reader thread (page-reader.ts).
import http from 'node:http';
import https from 'node:https';

export interface Exchanged { status: number; headers: Record<string, string>; text: string }

/** A keep-alive agent for the origin's scheme: one per transport, and one for its page reader. */
export function keepAliveAgent(origin: string): http.Agent {
  return origin.startsWith('https:') ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
}

/**
 * The error of a request that got no (whole) answer in time: code `EP_TIMEOUT`, which the client
 * does not retry (a service that does not answer would only be waited for again).
 */
export function timeoutError(url: string, timeoutMs: number): Error & { code: string } {
  const u = new URL(url);
  return Object.assign(new Error(`${u.origin}${u.pathname}: no answer within ${timeoutMs / 1000} s (the request timeout: --timeout or EDGEPLANE_TIMEOUT)`), { code: 'EP_TIMEOUT' });
}

/**
 * Sends `payload` (or nothing) to `url`; resolves with the status, the headers (repeated ones
 * joined) and the body's text. With `timeoutMs`, the whole exchange (connection, answer and body)
 * must be done by then, or it is cut and rejected with `timeoutError`.
 */
export function exchange(url: string, { method, agent, headers, timeoutMs }: { method: string; agent: http.Agent; headers: Record<string, string>; timeoutMs?: number }, payload?: string): Promise<Exchanged> {
  return new Promise<Exchanged>((resolveExchange, rejectExchange) => {
    let timer: NodeJS.Timeout | undefined;
    const resolve = (v: Exchanged) => { clearTimeout(timer); resolveExchange(v); };
    const reject = (err: Error) => { clearTimeout(timer); rejectExchange(err); };
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
    if (timeoutMs) {
      timer = setTimeout(() => {
        const err = timeoutError(url, timeoutMs);
        reject(err);
        req.destroy(err);
      }, timeoutMs);
    }
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EP_TIMEOUT') return reject(err);
      // https:// to a port that speaks plain HTTP: OpenSSL's "wrong version number" says only that.
      const hint = err.code === 'EPROTO' && /wrong version number/.test(err.message) ? ' (the server there does not speak TLS: is it http://?)' : '';
      reject(Object.assign(err, { message: `${new URL(url).origin}: ${err.message.trimEnd()}${hint}` }));
    });
    req.end(payload);
  });
}
