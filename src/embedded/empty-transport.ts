import { KINDS } from '../kinds/registry.js';
import type { RawResponse, Transport } from '../client/transport.js';

/**
 * The embedded target of a read-only command (plan, export) on a state directory that holds no
 * database: its database would be empty, so no engine is started at all. Every list answers with
 * no items, as the empty service would (the same page shape, no next page); one object answers 404;
 * a child's list is 404 too (its parent is not there either); a write is refused (nothing may be written to a directory the command does not make). Named like
 * the embedded transport (`embedded:<dir>`), so a plan saved from it applies there.
 */
export function emptyTransport(dir: string): Transport {
  const lists = new Map<string, string>();
  for (const k of KINDS) if (k.listKey && !k.parent) lists.set(k.path, k.listKey);
  return {
    target: `embedded:${dir}`,
    request: async (method, path): Promise<RawResponse> => {
      const bare = path.replace(/^[a-z]+:\/\/[^/]+/i, '').replace(/\?.*$/, '');
      if (method !== 'GET') {
        return { status: 409, headers: {}, body: { error_code: 'ERR_CONFLICT', status_code: 409, msg: `no embedded state at ${dir}: a read-only command writes nothing` } };
      }
      const listKey = lists.get(bare);
      if (listKey) return { status: 200, headers: {}, body: { [listKey]: [], uri: bare, next_page_uri: null, etags: {} } };
      return { status: 404, headers: {}, body: { error_code: 'ERR_NOT_FOUND', status_code: 404, msg: `${bare}: not found (the embedded state is empty)` } };
    },
    close: async () => {},
  };
}

