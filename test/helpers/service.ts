import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp, type AppOptions } from '../../src/service/app.js';
import { createAccount } from '../../src/service/auth.js';
import type { Db } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { openPglite } from '../../src/store/pglite.js';
import { openPostgres } from '../../src/store/postgres.js';
import { specChecker } from './openapi.js';

export type Engine = 'pglite' | 'postgres';

const REQUIRE_PG = !!process.env.EDGEPLANE_REQUIRE_POSTGRES;
if (REQUIRE_PG && !process.env.DATABASE_URL) {
  throw new Error('EDGEPLANE_REQUIRE_POSTGRES is set but DATABASE_URL is not: the PostgreSQL tests would be skipped');
}

/** The engines the contract suites run against: PGlite always, PostgreSQL when DATABASE_URL is set. */
export const ENGINES: Engine[] = ['pglite', ...(process.env.DATABASE_URL ? (['postgres'] as const) : [])];

/** A fresh database: PGlite in memory, or a private schema on the PostgreSQL of DATABASE_URL. */
export async function openTestDb(engine: Engine, opts: { blank?: boolean } = {}): Promise<{ db: Db; drop: () => Promise<void> }> {
  if (engine === 'pglite') {
    // blank: made by initdb, not from the template (which has the migrations applied).
    const db = await openPglite(null, opts.blank ? { template: false } : {});
    return { db, drop: () => db.close() };
  }
  const schema = 'ep_test_' + randomBytes(6).toString('hex');
  const db = await openPostgres(process.env.DATABASE_URL!, { schema, max: 4 });
  return {
    db,
    drop: async () => {
      await db.query(`DROP SCHEMA ${schema} CASCADE`);
      await db.close();
    },
  };
}

export interface Response { status: number; headers: Headers; body: any; text: string }

/** Speaks HTTP to the service, with the version header and a key unless told otherwise. */
export class TestClient {
  constructor(readonly baseUrl: string, readonly apiKey: string | null, readonly accountId = '') {}

  async request(method: string, path: string, body?: unknown, headers: Record<string, string | null> = {}): Promise<Response> {
    const h: Record<string, string> = { 'service-version': '2' };
    if (this.apiKey) h.authorization = `Bearer ${this.apiKey}`;
    if (body !== undefined) h['content-type'] = 'application/json';
    for (const [k, v] of Object.entries(headers)) {
      if (v === null) delete h[k.toLowerCase()];
      else h[k.toLowerCase()] = v;
    }
    const res = await fetch(this.baseUrl + path, {
      method,
      headers: h,
      // Bytes as they are (a body that is not UTF-8); strings as written; anything else as JSON.
      body: body === undefined ? undefined : body instanceof Uint8Array ? new Blob([new Uint8Array(body)]) : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    // Every response a test sees must be what the service's OpenAPI document declares.
    const problem = method === 'HEAD' ? null : (await specChecker(this.baseUrl))?.check(method, path, res.status, res.headers.get('content-type'), text);
    if (problem) throw new Error(`response outside the OpenAPI document: ${problem}\n${text.slice(0, 500)}`);
    let parsed: unknown = undefined;
    try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  get(path: string) { return this.request('GET', path); }
  post(path: string, body: unknown) { return this.request('POST', path, body); }
  patch(path: string, body: unknown) { return this.request('PATCH', path, body); }
  put(path: string, body: unknown) { return this.request('PUT', path, body); }
  delete(path: string) { return this.request('DELETE', path); }
}

export interface TestService {
  engine: Engine;
  db: Db;
  app: FastifyInstance;
  url: string;
  /** A new account (optionally with the abuse-report flag) and a client holding its key. */
  account(opts?: { abuseReports?: boolean }): Promise<TestClient>;
  close(): Promise<void>;
}

/**
 * The real service on a real socket, on a fresh database of the given engine. With `on`: another
 * app (other options) on the database of that service, which a test's accounts keep apart; closing
 * it closes the app alone. A database is what costs to start (PGlite: most of a second of CPU).
 */
export async function startTestService(engine: Engine, opts: Partial<AppOptions> = {}, on?: TestService): Promise<TestService> {
  const { db, drop } = on ? { db: on.db, drop: async () => {} } : await openTestDb(engine);
  if (!on) await migrate(db);
  const app = await buildApp({ db, ...opts });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  const url = typeof addr === 'object' && addr ? `http://127.0.0.1:${addr.port}` : '';
  return {
    engine, db, app, url,
    async account(o = {}) {
      const issued = await createAccount(db, { name: 'test', abuseReports: o.abuseReports });
      return new TestClient(url, issued.api_key, issued.account_id);
    },
    async close() {
      await app.close();
      await drop();
    },
  };
}

/**
 * The real service on a PostgreSQL database of its own (not a schema of the shared one), for tests
 * that need the whole database: its default collation (`create` makes it), or every connection to
 * it cut. `admin` is a connection to the server's default database; `close` drops the database.
 */
export async function startServiceOnOwnDatabase(prefix: string, create: (admin: pg.Client, name: string) => Promise<unknown> = (a, n) => a.query(`CREATE DATABASE ${n}`)) {
  const url = new URL(process.env.DATABASE_URL!);
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  await create(admin, name);
  url.pathname = `/${name}`;
  const db = await openPostgres(url.toString(), { max: 4 });
  await migrate(db);
  const app = await buildApp({ db });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  return {
    name, admin, db, app,
    async account(): Promise<TestClient> {
      const issued = await createAccount(db, { name: prefix });
      return new TestClient(`http://127.0.0.1:${port}`, issued.api_key, issued.account_id);
    },
    async close() {
      await app.close().catch(() => {});
      await db.close().catch(() => {});
      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/** A schema of its own on DATABASE_URL's server, and the URL that makes it the search path (for `serve` processes); `drop` removes it. */
export async function ownSchema(prefix: string) {
  const schema = prefix + randomBytes(5).toString('hex');
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const url = new URL(process.env.DATABASE_URL!);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { schema, admin, url, async drop() { await admin.query(`DROP SCHEMA ${schema} CASCADE`); await admin.end(); } };
}
