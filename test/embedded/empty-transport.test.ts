import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { emptyTransport } from '../../src/embedded/empty-transport.js';
import { KINDS } from '../../src/kinds/registry.js';
import { readLiveState } from '../../src/reconciler/state/read-state.js';

/** A read-only command on a state directory with no database reads an empty one, and starts none. */
describe('the empty embedded target', () => {
  it('lists every kind as empty, in the service\'s page shape; one object is 404; a write is refused', async () => {
    const t = emptyTransport('/nowhere/state');
    expect(t.target).toBe('embedded:/nowhere/state');
    const client = new ApiClient(t);
    const lists = await readLiveState(client);
    for (const k of KINDS.filter((k) => k.listKey && !k.parent)) {
      if (k.listKey! in lists) expect(lists[k.listKey!]).toEqual([]);
    }
    expect(Object.keys(lists).length).toBeGreaterThan(0);
    const page = await t.request('GET', 'http://localhost/backends/failover?limit=100');
    expect(page).toMatchObject({ status: 200, body: { backends: [], next_page_uri: null } });
    const one = await t.request('GET', '/backends/failover/bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs');
    expect(one.status).toBe(404);
    expect((one.body as { error_code: string }).error_code).toBe('ERR_NOT_FOUND');
    const write = await t.request('POST', '/backends/failover', { backends: [] });
    expect(write.status).toBe(409);
    await client.close();
  });
});
