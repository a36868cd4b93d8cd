import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

const hr = (n: number) => `bkdhr_${String(n).padStart(27, '0')}`;

describe.each(ENGINES)('failover backends on %s', (engine) => {
  let svc: TestService;
  let c: TestClient;
  beforeAll(async () => { svc = await startTestService(engine); });
  afterAll(async () => { await svc?.close(); });
  beforeAll(async () => { c = await svc.account(); });

  const create = async (backends: string[]) => {
    const res = await c.post('/backends/failover', { backends });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };

  it('keeps children in the order given and accepts backend kinds it does not store', async () => {
    const child = await create([hr(1)]);
    const kids = [hr(2), child, 'bkdtg_' + 'a'.repeat(27), 'bkdwd_' + 'b'.repeat(27), 'bkdsc_' + 'c'.repeat(27)];
    const res = await c.post('/backends/failover', { backends: kids });
    expect(res.status).toBe(201);
    expect(res.body.backends).toEqual(kids);
    const reordered = await c.patch(`/backends/failover/${res.body.id}`, { backends: [...kids].reverse() });
    expect(reordered.body.backends).toEqual([...kids].reverse());
  });

  it('requires backends on create and rejects malformed or duplicate children', async () => {
    const missing = await c.post('/backends/failover', { description: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toBe('backends: is required');
    const bad = await c.post('/backends/failover', { backends: [hr(1), 'ca_' + 'a'.repeat(27)] });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toMatch(/^backends\[1\]: must be a backend id/);
    const dup = await c.post('/backends/failover', { backends: [hr(1), hr(1)] });
    expect(dup.status).toBe(400);
    expect(dup.body.msg).toMatch(/^backends: /);
    // At most 100 children (a list of thousands made every page of the list megabytes long).
    const many = Array.from({ length: 101 }, (_, i) => hr(i));
    const over = await c.post('/backends/failover', { backends: many });
    expect(over.status).toBe(400);
    expect(over.body.msg).toBe('backends: must NOT have more than 100 items');
    expect((await c.post('/backends/failover', { backends: many.slice(0, 100) })).status).toBe(201);
  });

  it('requires failover children to exist in the account', async () => {
    const missing = 'bkdfo_' + 'q'.repeat(27);
    const res = await c.post('/backends/failover', { backends: [hr(1), missing] });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('ERR_INVALID_REFERENCE');
    expect(res.body.msg).toBe(`backends[1]: failover backend ${missing} does not exist`);
    const other = await svc.account();
    const foreign = (await other.post('/backends/failover', { backends: [] })).body.id;
    const cross = await c.post('/backends/failover', { backends: [foreign] });
    expect(cross.status).toBe(400);
    expect(cross.body.error_code).toBe('ERR_INVALID_REFERENCE');
  });

  it('refuses self references and cycles, and leaves the backend as it was', async () => {
    const a = await create([]);
    const self = await c.patch(`/backends/failover/${a}`, { backends: [a] });
    expect(self.status).toBe(400);
    expect(self.body.error_code).toBe('ERR_REFERENCE_CYCLE');
    const b = await create([a]);
    const cc = await create([b]);
    const cycle = await c.patch(`/backends/failover/${a}`, { backends: [hr(9), cc] });
    expect(cycle.status).toBe(400);
    expect(cycle.body.error_code).toBe('ERR_REFERENCE_CYCLE');
    expect(cycle.body.msg).toMatch(/^backends\[1\]: /);
    expect((await c.get(`/backends/failover/${a}`)).body.backends).toEqual([]);
    // A diamond is not a cycle.
    const d = await create([b, cc]);
    expect((await c.get(`/backends/failover/${d}`)).status).toBe(200);
  });

  it('refuses to delete a failover backend another one uses, naming the user', async () => {
    const child = await create([]);
    const parent = await create([child]);
    const res = await c.delete(`/backends/failover/${child}`);
    expect(res.status).toBe(409);
    expect(res.body.error_code).toBe('ERR_IN_USE');
    expect(res.body.msg).toContain(parent);
    expect((await c.patch(`/backends/failover/${parent}`, { backends: [] })).status).toBe(200);
    expect((await c.delete(`/backends/failover/${child}`)).status).toBe(204);
  });
});
