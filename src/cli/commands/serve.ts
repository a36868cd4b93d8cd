import { readFileSync } from 'node:fs';
import closeWithGrace from 'close-with-grace';
import { buildApp } from '../../service/app.js';
import { ensureCredentials } from '../../embedded/embedded-credentials.js';
import { openEngine } from '../../embedded/engine.js';
import { stateDirOf } from '../../embedded/state-dir.js';
import { stateDirFor, stdio } from '../output.js';
import { startJobWorker } from '../../service/job-worker.js';
import { rateLimitFromEnv, serverOptionsFromEnv, serviceOptionsFromEnv, workerOptionsFromEnv } from '../service-config.js';

export interface ServeFlags { port: string; host: string; state?: string; logLevel?: string; tlsCert?: string; tlsKey?: string }

/** The certificate and key of `--tls-cert` / `--tls-key`, both or neither. */
function readTls(flags: ServeFlags): { cert: string; key: string } | undefined {
  if (!flags.tlsCert && !flags.tlsKey) return undefined;
  if (!flags.tlsCert || !flags.tlsKey) throw new Error('--tls-cert and --tls-key go together: give both, or neither for plain HTTP');
  const read = (flag: string, file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`${flag} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  return { cert: read('--tls-cert', flags.tlsCert), key: read('--tls-key', flags.tlsKey) };
}

export async function serve(flags: ServeFlags): Promise<void> {
  const { enabled: runJobs, ...workerOptions } = workerOptionsFromEnv();
  const { shutdownTimeoutMs, ...limits } = serverOptionsFromEnv();
  const rateLimit = rateLimitFromEnv();
  const tls = readTls(flags);
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
    app = await buildApp({
      db, ...serviceOptionsFromEnv(), rateLimit, server: { ...limits, tls },
      logLevel: flags.logLevel ?? process.env.EDGEPLANE_LOG_LEVEL ?? 'info',
    });
    await app.listen({ port, host: flags.host });
  } catch (err) {
    // A port in use, an address not on this machine, a bad certificate: the process ends with the
    // error, the database closed and the state directory released (open, they would keep it running).
    await app?.close();
    await db.close();
    throw err;
  }
  const addr = app.server.address();
  const actualPort = typeof addr === 'object' && addr ? addr.port : port;
  const url = `${tls ? 'https' : 'http'}://${flags.host.includes(':') ? `[${flags.host}]` : flags.host}:${actualPort}`;
  db.lock?.setUrl(url);
  // Every process runs a worker: the queue is in the database, so N replicas share the work.
  const worker = runJobs ? startJobWorker(db, { ...workerOptions, log: app.log }) : null;
  app.log.info(
    { url, engine: db.engine, database: db.describe, worker: worker?.id ?? null, rate_limit: rateLimit.perMinute, rate_limit_store: rateLimit.redisUrl ? 'redis' : 'process' },
    `edgeplane listening on ${url} (database ${db.describe})`,
  );

  // SIGTERM / SIGINT: stop accepting connections, let the requests in flight and the job being
  // run finish, close the database, exit 0. Past the shutdown timeout, or on a second signal,
  // exit 1 at once (close-with-grace).
  const running = app;
  closeWithGrace({
    delay: shutdownTimeoutMs,
    logger: { error: (msg: unknown) => running.log.error(typeof msg === 'string' ? msg : { err: msg }, 'shutdown') },
  }, async ({ signal, err }) => {
    if (err) running.log.error({ err }, 'shutting down after an uncaught error');
    else running.log.info({ signal }, 'shutting down');
    await Promise.all([running.close(), worker?.stop()]);
    await db.close();
    running.log.info('stopped');
  });
}
