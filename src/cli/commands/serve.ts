import { buildApp } from '../../service/app.js';
import { openEngine } from '../engine.js';
import { serviceOptionsFromEnv } from '../service-config.js';

export interface ServeFlags { port: string; host: string; state?: string; logLevel?: string }

export async function serve(flags: ServeFlags): Promise<void> {
  const db = await openEngine({ stateDir: flags.state });
  const app = await buildApp({ db, ...serviceOptionsFromEnv(), logLevel: flags.logLevel ?? process.env.EDGEPLANE_LOG_LEVEL ?? 'info' });
  const port = Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: ${flags.port} is not a port number`);
  await app.listen({ port, host: flags.host });
  const addr = app.server.address();
  const actualPort = typeof addr === 'object' && addr ? addr.port : port;
  const url = `http://${flags.host.includes(':') ? `[${flags.host}]` : flags.host}:${actualPort}`;
  db.lock?.setUrl(url);
  app.log.info({ url, engine: db.engine, database: db.describe }, `edgeplane listening on ${url}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    await app.close();
    await db.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
