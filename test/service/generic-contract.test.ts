import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLES } from '../helpers/samples.js';
import { ENGINES, startTestService, type TestService } from '../helpers/service.js';

/** The rules every kind shares, run over the table of kinds and over both engines. */
describe.each(ENGINES)('generic contract on %s', (engine) => {
  let svc: TestService;
  beforeAll(async () => { svc = await startTestService(engine); });
  afterAll(async () => { await svc?.close(); });

  describe.each(SAMPLES)('$kind', (sample) => {
    it('creates, gets, lists, updates and deletes', async () => {
      const c = await svc.account();
      const ctx = (await sample.setup?.(c)) ?? {};
      const path = sample.path(ctx);
      const created = await c.post(path, sample.create(ctx, 1));
      expect(created.status).toBe(201);
      const obj = created.body;
      expect(obj.id).toMatch(/^[a-z]+_[0-9A-Za-z]{27}$/);
      expect(obj.uri).toBe(`${svc.url}${path}/${obj.id}`);
      expect(obj.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(created.headers.get('operation-id')).toMatch(/^op_/);
      expect(created.headers.get('location')).toBe(obj.uri);

      const got = await c.get(`${path}/${obj.id}`);
      expect(got.status).toBe(200);
      expect(got.body).toEqual(obj);

      if (sample.listKey) {
        const list = await c.get(path);
        expect(list.status).toBe(200);
        expect(list.body[sample.listKey]).toEqual([obj]);
        expect(list.body.uri).toBe(`${svc.url}${path}`);
        expect(list.body.next_page_uri).toBeNull();
      }

      const upd = sample.update(ctx);
      const patched = await c.patch(`${path}/${obj.id}`, upd);
      expect(patched.status).toBe(200);
      for (const [k, v] of Object.entries(upd)) {
        if (typeof v === 'string' || Array.isArray(v)) expect(patched.body[k]).toEqual(v);
      }
      expect((await c.get(`${path}/${obj.id}`)).body).toEqual(patched.body);

      const del = await c.delete(`${path}/${obj.id}`);
      expect(del.status).toBe(204);
      expect(del.text).toBe('');
      expect((await c.get(`${path}/${obj.id}`)).status).toBe(404);
      expect((await c.delete(`${path}/${obj.id}`)).status).toBe(404);
    });

    it('leaves description and metadata absent until set, clears them with "", limits them in bytes', async () => {
      const c = await svc.account();
      const ctx = (await sample.setup?.(c)) ?? {};
      const path = sample.path(ctx);
      const body = { ...(sample.create(ctx, 2) as Record<string, unknown>) };
      delete body.description;
      const created = await c.post(path, body);
      expect(created.status).toBe(201);
      expect(created.body).not.toHaveProperty('description');
      expect(created.body).not.toHaveProperty('metadata');

      const set = await c.patch(`${path}/${created.body.id}`, { description: 'é'.repeat(127), metadata: 'm' });
      expect(set.status).toBe(200);
      expect(set.body.description).toBe('é'.repeat(127));
      const kept = await c.patch(`${path}/${created.body.id}`, {});
      expect(kept.body.description).toBe('é'.repeat(127));
      expect(kept.body.metadata).toBe('m');

      // 128 × 'é' is 256 bytes but only 128 characters: the limit is bytes.
      const tooLong = await c.patch(`${path}/${created.body.id}`, { description: 'é'.repeat(128) });
      expect(tooLong.status).toBe(400);
      expect(tooLong.body.error_code).toBe('ERR_VALIDATION');
      expect(tooLong.body.msg).toMatch(/^description: must be at most 255 bytes/);
      const bigMeta = await c.patch(`${path}/${created.body.id}`, { metadata: 'x'.repeat(4097) });
      expect(bigMeta.status).toBe(400);
      expect(bigMeta.body.msg).toMatch(/^metadata: must be at most 4096 bytes/);
      expect((await c.get(`${path}/${created.body.id}`)).body.description).toBe('é'.repeat(127));

      const cleared = await c.patch(`${path}/${created.body.id}`, { description: '', metadata: '' });
      expect(cleared.status).toBe(200);
      expect(cleared.body).not.toHaveProperty('description');
      expect(cleared.body).not.toHaveProperty('metadata');
    });

    it('rejects unknown fields and wrong types, naming the field, and keeps the object unchanged', async () => {
      const c = await svc.account();
      const ctx = (await sample.setup?.(c)) ?? {};
      const path = sample.path(ctx);
      const unknown = await c.post(path, { ...(sample.create(ctx, 3) as object), descripton: 'typo' });
      expect(unknown.status).toBe(400);
      expect(unknown.body).toEqual({
        error_code: 'ERR_UNKNOWN_FIELD', status_code: 400, msg: "unknown field 'descripton'",
        details: { operation_id: unknown.headers.get('operation-id') },
      });
      const created = await c.post(path, sample.create(ctx, 3));
      const wrongType = await c.patch(`${path}/${created.body.id}`, { description: 42 });
      expect(wrongType.status).toBe(400);
      expect(wrongType.body.msg).toBe('description: must be string');
      const notObject = await c.patch(`${path}/${created.body.id}`, [1, 2]);
      expect(notObject.status).toBe(400);
      expect((await c.get(`${path}/${created.body.id}`)).body).toEqual(created.body);
    });

    it('accepts the id in a PATCH body only when it equals the path id', async () => {
      const c = await svc.account();
      const ctx = (await sample.setup?.(c)) ?? {};
      const path = sample.path(ctx);
      const { body: obj } = await c.post(path, sample.create(ctx, 4));
      const same = await c.patch(`${path}/${obj.id}`, { id: obj.id, description: 'ok' });
      expect(same.status).toBe(200);
      const other = await c.patch(`${path}/${obj.id}`, { id: obj.id.slice(0, -1) + (obj.id.endsWith('A') ? 'B' : 'A'), description: 'no' });
      expect(other.status).toBe(400);
      expect(other.body.error_code).toBe('ERR_ID_MISMATCH');
      expect(other.body.msg).toMatch(/^id: /);
    });

    it('never shows one account another account\'s objects', async () => {
      const a = await svc.account();
      const b = await svc.account();
      const ctx = (await sample.setup?.(a)) ?? {};
      const path = sample.path(ctx);
      const { body: obj } = await a.post(path, sample.create(ctx, 5));
      for (const res of [
        await b.get(`${path}/${obj.id}`),
        await b.patch(`${path}/${obj.id}`, { description: 'stolen' }),
        await b.delete(`${path}/${obj.id}`),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body.error_code).toBe('ERR_NOT_FOUND');
      }
      if (sample.listKey) expect((await b.get(path)).body[sample.listKey]).toEqual([]);
      expect((await a.get(`${path}/${obj.id}`)).body).toEqual(obj);
    });

    if (sample.listKey) {
      it('pages through 250 objects newest first with limit, before_id and beforeId', async () => {
        const c = await svc.account();
        const ctx = (await sample.setup?.(c)) ?? {};
        const path = sample.path(ctx);
        const ids: string[] = [];
        for (let i = 0; i < 250; i += 25) {
          const batch = await Promise.all(Array.from({ length: 25 }, (_, j) => c.post(path, sample.create(ctx, i + j))));
          for (const r of batch) {
            expect(r.status).toBe(201);
            ids.push(r.body.id);
          }
        }
        const expected = [...ids].sort().reverse();
        const seen: string[] = [];
        let next: string | null = `${svc.url}${path}`;
        let pages = 0;
        while (next) {
          const page = await c.get(next.slice(svc.url.length));
          expect(page.status).toBe(200);
          const items = page.body[sample.listKey!];
          expect(items.length).toBeGreaterThan(0);
          seen.push(...items.map((o: { id: string }) => o.id));
          // The next link is a Link header too (a page reader follows it without parsing the page); none on the last page.
          expect(page.headers.get('link')).toBe(page.body.next_page_uri === null ? null : `<${page.body.next_page_uri}>; rel="next"`);
          next = page.body.next_page_uri;
          pages++;
        }
        expect(pages).toBe(3);
        expect(seen).toEqual(expected);

        const small = await c.get(`${path}?limit=7`);
        expect(small.body[sample.listKey!]).toHaveLength(7);
        expect(small.body.next_page_uri).toBe(`${svc.url}${path}?before_id=${expected[6]}&limit=7`);
        const camel = await c.get(`${path}?beforeId=${expected[6]}&limit=3`);
        expect(camel.body[sample.listKey!].map((o: { id: string }) => o.id)).toEqual(expected.slice(7, 10));
        // Exactly the last object left: the page holds it and says nothing remains.
        const last = await c.get(`${path}?before_id=${expected[248]}`);
        expect(last.body[sample.listKey!].map((o: { id: string }) => o.id)).toEqual([expected[249]]);
        expect(last.body.next_page_uri).toBeNull();
        const empty = await c.get(`${path}?before_id=${expected[249]}`);
        expect(empty.body[sample.listKey!]).toEqual([]);
        expect(empty.body.next_page_uri).toBeNull();

        // A before_id that is no id of this list (a typo, another kind's id) is refused, not read as "from the start".
        const otherKind = expected[0].startsWith('ca_') ? `bkdfo_${expected[0].split('_')[1]}` : `ca_${expected[0].split('_')[1]}`;
        for (const bad of ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'page=2', 'before_id=', 'before_id=xyz', `before_id=${otherKind}`, `before_id=${expected[0]}x`]) {
          const res = await c.get(`${path}?${bad}`);
          expect(res.status, bad).toBe(400);
          expect(res.body.error_code, bad).toBe('ERR_INVALID_QUERY');
        }
      });
    }
  });
});
