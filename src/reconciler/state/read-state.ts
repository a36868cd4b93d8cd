import type { ApiClient } from '../../client/api-client.js';
import type { Body, KindDef } from '../../kinds/types.js';
import { manifestKinds } from '../manifests/schema.js';
import type { ObservedLists } from '../plan/observed.js';

/** Every object of every managed kind, by list key: list pages only (children come inside parents). */
export async function readLiveState(client: ApiClient, onPage?: (kind: KindDef, items: Body[]) => void): Promise<ObservedLists> {
  const kinds = manifestKinds().filter((k) => k.operations.includes('list'));
  const lists = await Promise.all(kinds.map((k) => client.list(k, undefined, onPage && ((items) => onPage(k, items)))));
  return Object.fromEntries(kinds.map((k, i) => [k.listKey!, lists[i]]));
}
