/**
 * Where a kind's collection and objects live in the API: what the service routes, the client
 * requests and the planner writes into a step, from one rule. Structural, so the contract needs no
 * kind descriptions: any kind with a `path` (and a parent's `:param` in it) fits.
 */
export interface PathedKind {
  /** URL path of the collection; a parent's id appears as `:<parent.param>`. */
  path: string;
  parent?: { param: string };
}

export function collectionPath(kind: PathedKind, parentId: string | null): string {
  return kind.parent && parentId ? kind.path.replace(`:${kind.parent.param}`, parentId) : kind.path;
}

/** Path of one object, its parent's id filled into the collection path. */
export function objectPath(kind: PathedKind, id: string, parentId: string | null): string {
  return collectionPath(kind, parentId) + '/' + id;
}
