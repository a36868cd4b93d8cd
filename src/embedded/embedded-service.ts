/**
 * The embedded service's thread (started by `embeddedTransport`): the real fastify app on the
 * engine in the state directory, answering the main thread's requests and reading lists ahead
 * (`page-loop.ts`). The engine's WebAssembly and the app's request handling run here, beside the
 * reconciler's work on the main thread instead of between it: a plan's own work and the
 * service's work on its pages each get a core.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { compilePgliteWasm } from '../store/pglite-wasm.js';
import type { AppOptions } from '../service/app.js';
import { ensureCredentials } from './embedded-credentials.js';
import { keyRingFor } from './state-dir.js';
import { pageLoop } from '../client/page-loop.js';
import { injector } from '../client/headers.js';
import { openingDb } from '../store/db.js';

export interface EmbeddedServiceInput {
  /** null: an empty database in memory, and a key that is not kept. */
  stateDir: string | null;
  locked: boolean;
  appOptions: Partial<AppOptions>;
  /** Also serve HTTP on a loopback port (its URL is posted as `{ listening }`): other commands reach the directory through it. */
  listen?: boolean;
  /** The command only reads and exits (plan, export): the engine is sized for that (`openPglite`). */
  readsOnly?: boolean;
}

const port = parentPort!;
const post = (m: unknown) => port.postMessage(m);

type Message = { data?: EmbeddedServiceInput; claim?: Claim; written?: true; close?: true; id: number; req?: { method: string; path: string; body?: unknown; headers?: Record<string, string> }; url?: string; cancel?: number };
/**
 * A state directory the CLI claimed for a spare thread as it started (spare.ts), posted as
 * `{ claim }` before `{ data }`: its engine starts and its app is built before `{ data }` comes.
 */
interface Claim { stateDir: string; readsOnly: boolean; fresh: boolean; appOptions?: Partial<AppOptions> }
/** `readsOnly`: a spare thread's command only reads (a thread given its input has it there). */
const from = workerData as { data?: EmbeddedServiceInput; liftoffOnly?: boolean; spare?: boolean; readsOnly?: boolean };

// What does not depend on the directory starts at once, in a spare thread too (spare.ts): the
// engine's and the app's modules load, then the engine's WebAssembly compiles on V8's background
// threads (while the app is built). In that order because a command that runs once (`engineTier`)
// compiles it with V8 flags (`compilePgliteWasm`), which cost the modules loaded after them their
// code cache: set at the CLI's start, this thread's boot and module loads took some 35 ms more; set
// (and the compile started) once the engine's modules were loaded, the app's took ~150 ms more (the
// built-ins they load compiled from source, beside the compile's threads).
const engine$ = import('./engine.js');
engine$.catch(() => {}); // awaited below
const app$ = engine$.then(() => import('../service/app.js'), () => import('../service/app.js'));
app$.catch(() => {}); // awaited below; a failed open is reported first
const wasm$ = process.env.DATABASE_URL ? undefined : app$.then(() => {}, () => {}).then(() => compilePgliteWasm({ once: from.liftoffOnly, readsOnly: from.data?.readsOnly ?? from.readsOnly }));
wasm$?.catch(() => {}); // PGlite compiles it itself then

// Requests may come before the service is up (and a spare thread's directory comes as a message):
// they wait here, in order.
const early: Message[] = [];
let handle: ((m: Message) => void) | undefined;
let told: ((data: EmbeddedServiceInput) => void) | undefined;
const given = from.data;
const input$ = given ? Promise.resolve(given) : new Promise<EmbeddedServiceInput>((r) => (told = r));
// A spare thread learns whether it has a claim before its input: `{ claim }`, or `{ data }` first (none).
let claimTold: ((claim: Claim | undefined) => void) | undefined;
const claim$ = from.spare ? new Promise<Claim | undefined>((r) => (claimTold = r)) : Promise.resolve(undefined);
// A claimed directory's database is written by the main thread: the engine opens it once it says so.
let writtenTold: (() => void) | undefined;
const written$ = new Promise<void>((r) => (writtenTold = r));
const onMessage = (m: Message) => {
  if (m.claim) {
    claimTold?.(m.claim);
    claimTold = undefined;
  } else if (m.written) {
    writtenTold?.();
    writtenTold = undefined;
  } else if (told && m.data) {
    claimTold?.(undefined);
    claimTold = undefined;
    told(m.data);
    told = undefined;
  } else if (handle) handle(m);
  else early.push(m);
};
port.on('message', onMessage);
// Where the engine opens: a claimed directory is known early (the main thread writes its database
// while this thread boots, and says when it has: `{ written }`), else it comes with the input.
const where$: Promise<Pick<EmbeddedServiceInput, 'stateDir' | 'locked' | 'readsOnly'>> = claim$.then((c) => (c ? written$.then(() => ({ stateDir: c.stateDir, locked: true, readsOnly: c.readsOnly })) : input$));
// The app is built before the command takes this thread only on a new directory's claim (its
// options come with it: the CLI reads them from the environment, as the command would): building
// it starts the service's secrets, which make the directory's key ring and seal the values stored
// in plain text, and on a directory that had a database nothing of that is done before the command
// takes it (it may still fail first, `abandonClaim`). A new one's database and key ring are removed
// then. Otherwise the directory and the options come with the input.
const built$ = claim$.then((c): { stateDir: string | null; appOptions: Partial<AppOptions> } | Promise<{ stateDir: string | null; appOptions: Partial<AppOptions> }> =>
  (c?.fresh && c.appOptions ? { stateDir: c.stateDir, appOptions: c.appOptions } : input$));
built$.catch(() => {});

async function start() {
  const db$ = where$.then(async ({ stateDir, locked, readsOnly }) => {
    const { openEngine } = await engine$;
    return openEngine(stateDir === null ? { memory: true } : { stateDir, locked, readsOnly }, { pgliteWasm: await wasm$?.catch(() => undefined) });
  });
  db$.catch(() => {}); // awaited below
  // The app is built as soon as its modules and options are here, on the database as it opens
  // (`openingDb`: building it asks nothing of it): a claimed new directory's engine waits for its
  // files, and the app is built meanwhile.
  let app: Awaited<ReturnType<typeof import('../service/app.js')['buildApp']>> | undefined;
  try {
    const [{ stateDir, appOptions }, { buildApp }] = await Promise.all([built$, app$]);
    const engine = process.env.DATABASE_URL ? 'postgres' : 'pglite';
    app = await buildApp({ db: openingDb(db$, engine, `${engine}: opening`), metrics: 'off', openapi: false, secrets: keyRingFor(engine, stateDir), ...appOptions });
    await app.ready();
    const db = await db$;
    const creds = await ensureCredentials(db, stateDir, process.env.DATABASE_URL || undefined);
    return { db, app, inject: injector(app, creds.api_key) };
  } catch (err) {
    // A failed open is what is reported, whatever else failed meanwhile.
    const opened = await db$.then((db) => ({ db }), (openError: unknown) => ({ openError }));
    await app?.close().catch(() => {});
    if ('openError' in opened) throw opened.openError;
    await opened.db.close();
    throw err;
  }
}

let service: Awaited<ReturnType<typeof start>> | undefined;
try {
  service = await start();
} catch (err) {
  // Said once the command has taken this thread (a claimed one starts before): a message to a
  // thread nobody listens to yet is lost.
  await input$;
  post({ startError: { message: err instanceof Error ? err.message : String(err) } });
  // Nothing more is answered: the thread ends (the main thread fails what waits).
  port.off('message', onMessage);
  port.unref();
}

const { listen } = await input$;
if (service && listen) {
  // Not being reachable by other commands is no reason to stop this one: they are told the
  // directory is in use, as before.
  try {
    await service.app.listen({ host: '127.0.0.1', port: 0 });
    const address = service.app.server.address();
    if (address && typeof address === 'object') post({ listening: `http://127.0.0.1:${address.port}` });
  } catch { /* not served to others */ }
}

if (service) {
  const { db, app, inject } = service;
  const lists = pageLoop((url) => inject('GET', url), post);
  handle = async (m: Message) => {
    if (m.close) {
      await app.close();
      await db.close();
      post({ closed: true }); // the caller need not wait for this thread's end
      port.close(); // nothing else keeps the thread: it exits
    } else if (m.req) {
      try {
        post({ id: m.id, ...(await inject(m.req.method, m.req.path, m.req.body, m.req.headers)) });
      } catch (err) {
        post({ id: m.id, error: err instanceof Error ? err.message : String(err) });
      }
    } else lists(m as { id: number; url: string });
  };
  for (const m of early.splice(0)) void handle(m);
}
