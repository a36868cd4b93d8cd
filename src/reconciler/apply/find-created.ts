import { ApiRequestError, type ApiClient } from '../../client/api-client.js';
import { findKind, kindByName } from '../../kinds/registry.js';
import type { Body } from '../../kinds/types.js';
import { decodeMetadata } from '../ownership/marker.js';
import type { Step } from '../plan/types.js';

/**
 * Finds the object a create made when its response was lost: the object carrying this stack's
 * marker for the step's identity, other than the one the step replaces. Top-level kinds are read
 * with list pages; child kinds (routes) come embedded in their parent, whose path is the
 * collection path without its last segment.
 */
export async function findCreated(client: ApiClient, step: Step, stack: string, collectionPath: string): Promise<Body | undefined> {
  const kind = kindByName(step.object.kind);
  let candidates: Body[];
  if (!kind.parent) {
    candidates = await client.list(kind);
  } else {
    const parentKind = findKind(kind.parent.kind)!;
    const field = Object.entries(parentKind.embeds ?? {}).find(([, child]) => child === kind.name)?.[0];
    if (!field) throw new Error(`cannot look for a ${kind.title}: its parent does not embed it`);
    try {
      const parent = (await client.send('GET', collectionPath.replace(/\/[^/]+$/, ''))) as Body;
      candidates = (parent[field] as Body[] | undefined) ?? [];
    } catch (err) {
      if (err instanceof ApiRequestError && err.status === 404) return undefined;
      throw err;
    }
  }
  return candidates.find((o) => {
    const { marker } = decodeMetadata(o.metadata);
    return marker?.stack === stack && marker.id === step.object.identity && o.id !== step.object.id;
  });
}
