import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { canonicalJson } from '../../src/util/canonical-json.js';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/service/app.js';
import { createAccount } from '../../src/service/auth.js';
import { KeyRing, Sealer, sealedValues } from '../../src/service/writes/sealing.js';
import { MissingKeysError, rotateSecrets, secretsStatus } from '../../src/service/writes/secrets.js';
import type { Db } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { openPglite } from '../../src/store/pglite.js';
import { openPostgres } from '../../src/store/postgres.js';
import { ENGINES, TestClient, type Engine } from '../helpers/service.js';
import { newEdge, newRoute } from '../helpers/edges.js';

const k1 = KeyRing.generate('k1').ring.keys[0];
const k2 = KeyRing.generate('k2').ring.keys[0];
const ring = (...keys: typeof k1[]) => new KeyRing(keys);

/** A database of the engine that outlives one app: PGlite in a directory of its own, or a PostgreSQL schema of its own. */
async function ownDatabase(engine: Engine) {
  if (engine === 'pglite') {
    const dir = mkdtempSync(join(tmpdir(), 'ep-sealed-'));
    const open = async () => { const db = await openPglite(dir); await migrate(db); return db; };
    return { open, dir, schema: null as string | null, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const schema = 'ep_sealed_' + randomBytes(5).toString('hex');
  const open = async () => { const db = await openPostgres(process.env.DATABASE_URL!, { schema, max: 4 }); await migrate(db); return db; };
  return {
    open, dir: null as string | null, schema,
    drop: async () => { const db = await openPostgres(process.env.DATABASE_URL!); await db.query(`DROP SCHEMA ${schema} CASCADE`); await db.close(); },
  };
}

async function serveOn(db: Db, keys: KeyRing | undefined): Promise<{ app: FastifyInstance; url: string }> {
  const app = await buildApp({ db, secrets: keys });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` };
}

/** Every file under `dir`, as bytes. */
function filesUnder(dir: string): Buffer[] {
  const out: Buffer[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(readFileSync(p));
  }
  return out;
}

/** The module a planted secret goes into, by turns: an OIDC client secret, a webhook secret, an OAuth client secret. */
function moduleWith(i: number, secret: string): [string, Record<string, unknown>] {
  if (i % 3 === 0) return ['oidc', { issuer: 'https://accounts.example.com', client_id: `c${i}`, client_secret: secret }];
  if (i % 3 === 1) return ['webhook_verification', { provider: 'github', secret }];
  return ['oauth', { provider: { github: { client_id: `c${i}`, client_secret: secret } } }];
}

const PATH: Record<string, string> = { oidc: 'oidc.client_secret', webhook_verification: 'webhook_verification.secret', oauth: 'oauth.provider.github.client_secret' };

describe.each(ENGINES)('sealed secrets (%s)', (engine) => {
  let store: Awaited<ReturnType<typeof ownDatabase>>;
  let db: Db;
  let svc: { app: FastifyInstance; url: string };
  let c: TestClient;
  let edgeId: string;
  /** route id → module name and its secret's last value. */
  const expected = new Map<string, { module: string; secret: string }>();
  const planted: string[] = [];
  /** What a plain hash of each keyed request would be: a dump must not hold it (a guess could be tested against it). */
  const plainHashes: string[] = [];
  /** A value written beside the secrets, not secret: it must be found where they are not (the search works). */
  const visible = `visible-${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    store = await ownDatabase(engine);
    db = await store.open();
    svc = await serveOn(db, ring(k1));
    const issued = await createAccount(db, { name: 'sealed' });
    c = new TestClient(svc.url, issued.api_key, issued.account_id);
    edgeId = (await newEdge(c, { description: visible })).id;
    for (let i = 0; i < 100; i++) {
      const secret = `planted-${i}-${randomBytes(8).toString('hex')}`;
      planted.push(secret);
      const [module, body] = moduleWith(i, secret);
      // Some through an Idempotency-Key: its stored response must hold no secret either.
      const headers: Record<string, string> = i % 10 === 0 ? { 'idempotency-key': `k-${i}-${randomBytes(4).toString('hex')}` } : {};
      const request = { match_type: 'path_prefix', match: `/r${i}`, [module]: body };
      if (headers['idempotency-key']) plainHashes.push(createHash('sha256').update(`POST /edges/https/${edgeId}/routes\n${canonicalJson(request)}`).digest('base64url'));
      const res = await c.request('POST', `/edges/https/${edgeId}/routes`, request, headers);
      expect(res.status, res.text).toBe(201);
      expect(res.text).not.toContain(secret);
      expected.set(res.body.id, { module, secret });
    }
  }, 120_000);

  afterAll(async () => {
    await svc?.app.close();
    await db?.close();
    await store?.drop();
  });

  it('a dump of the database holds none of 100 planted secrets; the responses and views none either', async () => {
    const edge = await c.get(`/edges/https/${edgeId}`);
    expect(edge.status).toBe(200);
    for (const s of planted) expect(edge.text).not.toContain(s);
    let dump: Buffer[];
    if (engine === 'postgres') {
      dump = [execFileSync('pg_dump', ['--schema', store.schema!, '--data-only', process.env.DATABASE_URL!], { maxBuffer: 256 << 20, stdio: ['ignore', 'pipe', 'ignore'] })];
    } else {
      await svc.app.close();
      await db.close();
      dump = filesUnder(store.dir!);
      db = await store.open();
      svc = await serveOn(db, ring(k1));
      c = new TestClient(svc.url, c.apiKey, c.accountId);
    }
    const all = Buffer.concat(dump);
    expect(all.includes(visible), 'the search finds what is stored in plain text').toBe(true);
    const found = planted.filter((s) => all.includes(s));
    expect(found).toEqual([]);
    expect(plainHashes.length).toBe(10);
    expect(plainHashes.filter((h) => all.includes(h))).toEqual([]);
  }, 120_000);

  it('every stored secret opens with the key ring, bound to its object and field', async () => {
    const { rows } = await db.query<{ id: string; account_id: string; body: Record<string, unknown> }>('SELECT id, account_id, body FROM objects WHERE parent_id = $1', [edgeId]);
    const sealer = new Sealer(ring(k1));
    expect(rows.length).toBe(100);
    for (const r of rows) {
      const [v] = sealedValues(r.body);
      expect(v.path).toBe(PATH[expected.get(r.id)!.module]);
      expect(sealer.open(v.sealed, { accountId: r.account_id, objectId: r.id, path: v.path })).toBe(expected.get(r.id)!.secret);
      // Moved to another object, it does not open.
      expect(() => sealer.open(v.sealed, { accountId: r.account_id, objectId: rows.find((x) => x.id !== r.id)!.id, path: v.path })).toThrow(/altered, or moved/);
    }
  });

  it('a service without the key that opens them refuses to start, naming the key id', async () => {
    await expect(buildApp({ db, secrets: ring(k2) })).rejects.toThrow(/sealed with key k1, which the key ring \(EDGEPLANE_SECRETS_KEYS\) does not hold/);
    await expect(buildApp({ db })).rejects.toThrow(MissingKeysError);
    await expect(buildApp({ db })).rejects.toThrow(/key k1, and no key ring is given/);
  });

  it('rotation under writes loses no value, and every value then opens with the new key alone', async () => {
    await svc.app.close();
    svc = await serveOn(db, ring(k2, k1));
    c = new TestClient(svc.url, c.apiKey, c.accountId);
    const ids = [...expected.keys()];
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      for (let n = 0; writing || n < 10; n++) {
        const id = ids[(n * 7) % ids.length];
        const e = expected.get(id)!;
        const secret = `rotated-${n}-${randomBytes(6).toString('hex')}`;
        const [, body] = moduleWith(['oidc', 'webhook_verification', 'oauth'].indexOf(e.module), secret);
        const res = await c.put(`/edges/https/${edgeId}/routes/${id}/${e.module}`, body);
        expect(res.status, res.text).toBe(200);
        expected.set(id, { module: e.module, secret });
        writes++;
        if (n % 3 === 0) {
          // A write that leaves the secret out keeps it (carried over, re-wrapped or not).
          const kept = await c.patch(`/edges/https/${edgeId}/routes/${id}`, { description: `d${n}` });
          expect(kept.status, kept.text).toBe(200);
        }
      }
    })();
    const seen: number[] = [];
    const result = await rotateSecrets(db, ring(k2, k1), { batch: 7, progress: (p) => seen.push(p.remaining) });
    writing = false;
    await writer;
    expect(writes).toBeGreaterThan(0);
    expect(result.refused).toEqual([]);
    expect(result.remaining).toBe(0);
    expect(seen.length).toBeGreaterThan(1);
    const status = await secretsStatus(db, ring(k2));
    expect(status.keys.filter((k) => k.values > 0).map((k) => k.key_id)).toEqual(['k2']);
    expect(status.plain).toBe(0);
    // The old key gone: the service starts, and each value opens with k2 alone and is the last written.
    await svc.app.close();
    svc = await serveOn(db, ring(k2));
    c = new TestClient(svc.url, c.apiKey, c.accountId);
    const only = new Sealer(ring(k2));
    const { rows } = await db.query<{ id: string; account_id: string; body: Record<string, unknown> }>('SELECT id, account_id, body FROM objects WHERE parent_id = $1', [edgeId]);
    for (const r of rows) {
      const [v] = sealedValues(r.body);
      expect(only.open(v.sealed, { accountId: r.account_id, objectId: r.id, path: v.path })).toBe(expected.get(r.id)!.secret);
    }
  }, 120_000);

  it('a tampered ciphertext is refused, not re-sealed', async () => {
    const id = [...expected.keys()][5];
    const { rows } = await db.query<{ account_id: string; body: Record<string, unknown> }>('SELECT account_id, body FROM objects WHERE id = $1', [id]);
    const [v] = sealedValues(rows[0].body);
    const bytes = Buffer.from(v.sealed.v, 'base64');
    bytes[bytes.length - 1] ^= 1;
    v.holder[v.key] = { ...v.sealed, v: bytes.toString('base64') };
    await db.query('UPDATE objects SET body = $2 WHERE id = $1', [id, rows[0].body]);
    const place = { accountId: rows[0].account_id, objectId: id, path: v.path };
    expect(() => new Sealer(ring(k2)).open(v.holder[v.key] as never, place)).toThrow(/altered, or moved/);
    const k3 = KeyRing.generate('k3').ring.keys[0];
    const result = await rotateSecrets(db, ring(k3, k2));
    expect(result.refused.map((e) => e.message)).toEqual([`the sealed secret ${v.path} of ${id} does not open with key k2: it was altered, or moved from another object or field`]);
    expect(result.remaining).toBe(1);
  });
});

describe.each(ENGINES)('plain secrets sealed when a key ring is first given (%s)', (engine) => {
  it('a database written without a key ring is sealed at the first start with one', async () => {
    const store = await ownDatabase(engine);
    const db = await store.open();
    try {
      let svc = await serveOn(db, undefined);
      const issued = await createAccount(db, { name: 'plain' });
      let c = new TestClient(svc.url, issued.api_key, issued.account_id);
      const edge = await newEdge(c);
      const secrets = ['plain-one-' + randomBytes(4).toString('hex'), 'plain-two-' + randomBytes(4).toString('hex')];
      for (const s of secrets) await newRoute(c, edge.id, { webhook_verification: { provider: 'github', secret: s } });
      expect((await secretsStatus(db, undefined)).plain).toBe(2);
      await svc.app.close();
      svc = await serveOn(db, ring(k1));
      c = new TestClient(svc.url, issued.api_key, issued.account_id);
      const status = await secretsStatus(db, ring(k1));
      expect(status.plain).toBe(0);
      // The two secrets and the fingerprint key.
      expect(status.keys).toEqual([{ key_id: 'k1', values: 3, in_ring: true, newest: true }]);
      const { rows } = await db.query<{ body: unknown }>('SELECT body FROM objects WHERE parent_id = $1', [edge.id]);
      for (const s of secrets) expect(JSON.stringify(rows)).not.toContain(s);
      // The routes still answer, without their secrets, and a write keeps them.
      const got = await c.get(`/edges/https/${edge.id}`);
      expect(got.body.routes.map((r: { webhook_verification: unknown }) => r.webhook_verification)).toEqual([{ provider: 'github', enabled: true }, { provider: 'github', enabled: true }]);
      await svc.app.close();
    } finally {
      await db.close();
      await store.drop();
    }
  }, 60_000);
});
