import { buildApp } from '../../service/app.js';
import { ensureCredentials } from '../../embedded/embedded-credentials.js';
import { openEngine } from '../../embedded/engine.js';
import { stateDirOf } from '../../embedded/state-dir.js';
import { stateDirFor, stdio } from '../output.js';
import { startJobWorker } from '../../service/job-worker.js';
import { rateLimitFromEnv, serviceOptionsFromEnv, workerOptionsFromEnv } from '../service-config.js';

export interface ServeFlags { port: string; host: string; state?: string; logLevel?: string }

export async function serve(flags: ServeFlags): Promise<void> {
  const { enabled: runJobs, ...workerOptions } = workerOptionsFromEnv();
  const port = Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: ${flags.port} is not a port number`);
  if (!process.env.DATABASE_URL) await stateDirFor(stateDirOf({ stateDir: flags.state }), stdio);
  const db = await openEngine({ stateDir: flags.state });
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  try {
    // On the embedded database, the state directory's own account (as every CLI command makes
    // it): a `plan --state DIR` run beside this server reaches it through the lock's URL with that
    // key, even on a directory no command has opened yet (no `admin` can run while this holds it).
    if (db.engine === 'pglite') await ensureCredentials(db, stateDirOf({ stateDir: flags.state }));
    app = await buildApp({ db, ...serviceOptionsFromEnv(), rateLimit: rateLimitFromEnv(), logLevel: flags.logLevel ?? process.env.EDGEPLANE_LOG_LEVEL ?? 'info' });
    await app.listen({ port, host: flags.host });
  } catch (err) {
    // A port in use, an address not on this machine: the process ends with the error, the
    // database closed and the state directory released (open, they would keep it running).
    await app?.close();
    await db.close();
    throw err;
  }
  const addr = app.server.address();
  const actualPort = typeof addr === 'object' && addr ? addr.port : port;
  const url = `http://${flags.host.includes(':') ? `[${flags.host}]` : flags.host}:${actualPort}`;
  db.lock?.setUrl(url);
  // Every process runs a worker: the queue is in the database, so N replicas share the work.
  const worker = runJobs ? startJobWorker(db, { ...workerOptions, log: app.log }) : null;
  app.log.info({ url, engine: db.engine, database: db.describe, worker: worker?.id ?? null }, `edgeplane listening on ${url}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    await app.close();
    await worker?.stop();
    await db.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
