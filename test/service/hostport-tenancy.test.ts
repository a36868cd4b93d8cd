import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEdge } from '../helpers/edges.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

/** A domain no other test uses (hostports are unique across the service). */
const domain = () => `t${randomBytes(5).toString('hex')}.example.com`;

describe.each(ENGINES)('a hostname belongs to one account: overlapping hostports across accounts (%s)', (engine) => {
  let svc: TestService;
  let a: TestClient;
  let b: TestClient;
  beforeAll(async () => {
    svc = await startTestService(engine);
    [a, b] = [await svc.account(), await svc.account()];
  }, 60_000);
  afterAll(async () => { await svc?.close(); });

  const create = (c: TestClient, ...hostports: string[]) => c.post('/edges/https', { hostports });

  function expectOverlap(res: { status: number; body: any; text: string }, theirs: string[]) {
    expect(res.status, res.text).toBe(409);
    expect(res.body.error_code).toBe('ERR_HOSTPORT_IN_USE');
    expect(res.body.msg).toContain('another account');
    // Nothing about the other account: not its hostports, not its id.
    for (const t of theirs) expect(res.text).not.toContain(t);
    expect(res.text).not.toContain(a.accountId);
    expect(res.text).not.toContain(b.accountId);
  }

  it('refuses a wildcard covering another account\'s hostport, at any depth, and a wildcard covering another\'s wildcard', async () => {
    const d = domain();
    await newEdge(a, { hostports: [`a.${d}:443`] });
    expectOverlap(await create(b, `*.${d}:443`), [`a.${d}:443`]);
    const deep = domain();
    await newEdge(a, { hostports: [`x.y.${deep}:443`] });
    expectOverlap(await create(b, `*.${deep}:443`), [`x.y.${deep}:443`]);
    const w = domain();
    await newEdge(a, { hostports: [`*.s.${w}:443`] });
    expectOverlap(await create(b, `*.${w}:443`), [`*.s.${w}:443`]);
    // A valid hostport beside it does not get the edge through.
    expectOverlap(await create(b, `ok.${domain()}:443`, `*.${d}:443`), [`a.${d}:443`]);
  });

  it('refuses a hostport under another account\'s wildcard, on create and on update', async () => {
    const d = domain();
    await newEdge(b, { hostports: [`*.${d}:443`] });
    expectOverlap(await create(a, `a.${d}:443`), [`*.${d}:443`]);
    expectOverlap(await create(a, `x.y.${d}:443`), [`*.${d}:443`]);
    expectOverlap(await create(a, `*.s.${d}:443`), [`*.${d}:443`]);
    const mine = await newEdge(a);
    expectOverlap(await a.patch(`/edges/https/${mine.id}`, { hostports: [...mine.hostports, `A.${d.toUpperCase()}:443`] }), [`*.${d}:443`]);
    expect((await a.get(`/edges/https/${mine.id}`)).body.hostports).toEqual(mine.hostports);
  });

  it('allows overlaps within one account, names beside a wildcard that it does not cover, and a name once the other account let it go', async () => {
    const d = domain();
    await newEdge(a, { hostports: [`*.${d}:443`] });
    await newEdge(a, { hostports: [`a.${d}:443`, `*.s.${d}:443`] });
    const mine = await newEdge(a, { hostports: [`b.${d}:443`] });
    // The domain itself, and a name that only ends with the same letters, are not under the wildcard.
    const other = domain();
    const theirs = await newEdge(b, { hostports: [`${d}:443`, `x${d}:443`, `*.${other}:443`] });
    // An edge keeps what it had when its other hostports change.
    expect((await a.patch(`/edges/https/${mine.id}`, { hostports: [`b.${d}:443`, `c.${d}:443`] })).status).toBe(200);

    expectOverlap(await create(a, `z.${other}:443`), [`*.${other}:443`]);
    expect((await b.delete(`/edges/https/${theirs.id}`)).status).toBe(204);
    await newEdge(a, { hostports: [`z.${other}:443`] });
  });

  it('refuses one of two overlapping hostports of two accounts written at the same time', async () => {
    for (let round = 0; round < 8; round++) {
      const d = domain();
      const [wild, plain, deeperWild] = await Promise.all([
        create(b, `*.${d}:443`),
        create(a, `n${round}.${d}:443`),
        create(a, `*.q.${d}:443`),
      ]);
      const statuses = [wild.status, plain.status, deeperWild.status];
      // Either the wildcard got in and both of the other account's were refused, or it was refused.
      if (wild.status === 201) expect(statuses, JSON.stringify(statuses)).toEqual([201, 409, 409]);
      else expect(wild.status).toBe(409);
      expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    }
  }, 60_000);
});
