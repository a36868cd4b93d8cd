import type { ApiClient, ListedEtags } from '../../client/api-client.js';
import type { Body, KindDef } from '../../kinds/types.js';
import { manifestKinds } from '../manifests/schema.js';
import type { ObservedLists } from '../plan/observed.js';

/** Every object of every managed kind, by list key: list pages only (children come inside parents). */
export async function readLiveState(client: ApiClient): Promise<ObservedLists> {
  const kinds = listedKinds();
  const lists = await Promise.all(kinds.map((k) => client.list(k)));
  return Object.fromEntries(kinds.map((k, i) => [k.listKey!, lists[i]]));
}

/**
 * The same pages as `readLiveState`, each handed to `onPage` as it arrives with its ETags, and none
 * kept: a plan keeps what it makes of them (the request form of each object), not the responses themselves.
 */
export async function streamLiveState(client: ApiClient, onPage: (kind: KindDef, items: Body[], etags: ListedEtags | undefined) => void): Promise<void> {
  await Promise.all(listedKinds().map((k) => client.eachPage(k, undefined, (items, etags) => onPage(k, items, etags))));
}

let listed: KindDef[] | undefined;
/** The kinds whose lists a full read takes, in the order it takes them (children come inside). */
export function listedKinds(): KindDef[] {
  return (listed ??= manifestKinds().filter((k) => k.operations.includes('list')));
}
