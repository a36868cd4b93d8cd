import { describe, expect, it } from 'vitest';
import { ApiClient, etagOf } from '../../src/client/api-client.js';
import type { RawResponse, Transport } from '../../src/client/transport.js';
import { kindByName } from '../../src/kinds/registry.js';

const ID = 'bkdfo_000000000000000000000000001';
const object = () => ({ id: ID, backends: ['bkdhr_000000000000000000000000007'] });
/** Lists one failover backend with `Prefer: etags`, and answers its GET with an ETag header. */
const transport: Transport = {
  target: 'fake',
  async request(_method, path): Promise<RawResponse> {
    return path.startsWith('/backends/failover/')
      ? { status: 200, headers: { etag: '"3"' }, body: object() }
      : { status: 200, headers: {}, body: { backends: [object()], etags: { [ID]: '"3"' }, next_page_uri: null } };
  },
  async close() {},
};

describe('the ETag a list or a GET gave an object', () => {
  it('is read by etagOf, and is not part of the object: it equals its JSON, and a copy carries none', async () => {
    const client = new ApiClient(transport);
    const [listed] = await client.list(kindByName('failoverBackend'));
    const got = await client.getObject(`/backends/failover/${ID}`);
    for (const item of [listed, got]) {
      expect(etagOf(item)).toBe('"3"');
      expect(item).toStrictEqual(object());
      expect(etagOf({ ...item })).toBeUndefined();
      expect(etagOf(Object.assign({}, item))).toBeUndefined();
    }
  });
});
