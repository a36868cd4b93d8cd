import type { Body } from '../kinds/types.js';
import { KINDS } from '../kinds/registry.js';
import type { RawResponse, Transport } from './transport.js';

/**
 * A read-only service in memory: list bodies by list key (`{https_edges: [...]}`), served as list
 * pages of `pageSize` objects to GET requests; any other request is answered 405. It lets the code
 * `plan` runs (`preparePlan`) run on a live state written down in a test or a scenario folder,
 * with no service: the pages arrive one by one, as they do over HTTP.
 */
export function listsTransport(target: string, lists: Record<string, Body[]>, opts: { pageSize?: number } = {}): Transport {
  const pageSize = opts.pageSize ?? 100;
  const byPath = new Map(KINDS.filter((k) => k.listKey && !k.parent).map((k) => [k.path, k.listKey!]));
  return {
    target,
    async request(method: string, path: string): Promise<RawResponse> {
      const [p, query = ''] = path.split('?');
      const listKey = byPath.get(p);
      if (method !== 'GET' || !listKey) return { status: 405, headers: {}, body: { message: `${method} ${p}: not served in memory` } };
      const from = Number(new URLSearchParams(query).get('offset') ?? 0);
      const all = lists[listKey] ?? [];
      const items = all.slice(from, from + pageSize);
      const next = from + pageSize < all.length ? `${p}?limit=${pageSize}&offset=${from + pageSize}` : null;
      // A copy of each page, as a response is: the planner may keep what it reads.
      return { status: 200, headers: {}, body: structuredClone({ [listKey]: items, next_page_uri: next }) };
    },
    async close() {},
  };
}
