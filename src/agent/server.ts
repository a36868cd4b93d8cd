import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AgentStatus } from './agent.js';
import type { AgentMetrics } from './metrics.js';

/** The largest webhook body taken (GitHub's push payloads are capped at 25 MB; ours need none of it but the signature). */
const MAX_BODY = 25 * 1024 * 1024;

/** Whether `signature` (`X-Hub-Signature-256: sha256=<hex>`) is the HMAC-SHA256 of `body` with `secret`, compared in constant time. */
export function validSignature(secret: string, body: Buffer, signature: string | undefined): boolean {
  if (!signature || !/^sha256=[0-9a-f]{64}$/i.test(signature)) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(signature.slice(7), 'hex'));
}

export interface AgentServerOptions {
  status: () => AgentStatus;
  metrics: AgentMetrics;
  /** The webhook's secret; without one, POST /hooks/git is 404. */
  webhookSecret?: string;
  onWebhook: () => void;
}

function send(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/**
 * The agent's own HTTP server: `GET /healthz` (the process answers), `GET /readyz` (200, or 503
 * with the reasons: a source that cannot be fetched, a stack whose last sync failed), `GET
 * /metrics`, and `POST /hooks/git`, a push webhook signed as GitHub signs it: a bad or missing
 * signature is 401 and fetches nothing.
 */
export function agentServer(opts: AgentServerOptions): Server {
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') return send(res, 200, { ok: true });
    if (req.method === 'GET' && path === '/readyz') {
      const s = opts.status();
      return send(res, s.ready ? 200 : 503, s);
    }
    if (req.method === 'GET' && path === '/metrics') {
      opts.metrics.registry.metrics().then((text) => send(res, 200, text, opts.metrics.registry.contentType), () => send(res, 500, { error: 'metrics failed' }));
      return;
    }
    if (path === '/hooks/git') {
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST');
        return send(res, 405, { error: 'POST only' });
      }
      if (!opts.webhookSecret) return send(res, 404, { error: 'no webhook secret is configured (webhook_secret_env)' });
      const chunks: Buffer[] = [];
      let size = 0;
      let over = false;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) over = true;
        else chunks.push(c);
      });
      req.on('end', () => {
        if (over) return send(res, 413, { error: 'body too large' });
        const sig = req.headers['x-hub-signature-256'];
        if (!validSignature(opts.webhookSecret!, Buffer.concat(chunks), Array.isArray(sig) ? sig[0] : sig)) return send(res, 401, { error: 'bad or missing X-Hub-Signature-256' });
        // GitHub's first delivery is a ping: nothing to fetch, but answered as taken.
        if (req.headers['x-github-event'] !== 'ping') opts.onWebhook();
        send(res, 202, { fetching: req.headers['x-github-event'] !== 'ping' });
      });
      req.on('error', () => res.destroy());
      return;
    }
    send(res, 404, { error: 'not found: /healthz, /readyz, /metrics, POST /hooks/git' });
  });
}
