import type { Body, KindDef, RefDef } from '../../kinds/types.js';
import type { Hit } from '../paths.js';
import type { SourceDoc } from './load.js';
import type { Position } from './problems.js';

/** One object of the manifests: a document, or a child nested in one (a route in its edge). */
export interface ManifestObject {
  kind: KindDef;
  name: string;
  /** Stable identity across runs: `CertificateAuthority/root`, `HTTPSEdge/web/routes/api`. */
  identity: string;
  parent?: ManifestObject;
  doc: SourceDoc;
  /** Where this object sits inside its document (`[]`, or `['routes', 0]`). */
  at: (string | number)[];
  /** The API fields and modules as written (refs by name or id, secrets by reference). */
  body: Body;
  protect: boolean;
  /**
   * Identities this object may still have live after a rename (`renamed_from`, its parent's, or
   * both, applied or not yet), most likely first; none when nothing was renamed. The plan keeps
   * the object found under the first that matches.
   */
  previousIdentities: string[];
  /** `renamed_from` as written (its own former name). */
  renamedFrom?: string;
  children: ManifestObject[];
  /** Passed the schema; semantic passes look only at valid objects. */
  valid: boolean;
  /**
   * What validation reads of the object, found once and kept with it (`refsOf`, `uniqueValuesOf`,
   * `secretValues`): objects are shared between watch runs and never modified once built.
   */
  refs: RefValue[] | undefined;
  uniques: string[][] | undefined;
  /** Secret fields: concrete paths (`oidc.client_secret`) and values as written. */
  secrets: Hit[] | undefined;
}

/** A reference an object makes: the ref it fills, the value written, and where it sits in the object. */
export interface RefValue { def: RefDef; value: string; path: (string | number)[] }

export function identityOf(kind: KindDef, name: string, parent?: { identity: string; field: string }): string {
  return parent ? childPrefix(parent.identity, parent.field) + name : `${kind.manifestKind}/${name}`;
}

/**
 * The identity of a parent's children in `field` up to their name (`HTTPSEdge/web/routes/`): a
 * child's identity is it and the child's name. Made once for all the children of a parent.
 */
export function childPrefix(parentIdentity: string, field: string): string {
  return `${parentIdentity}/${field}/`;
}

/** The objects and, after each, its children (an edge's routes), in one list made once. */
export function withChildren(objects: ManifestObject[]): ManifestObject[] {
  const out: ManifestObject[] = [];
  for (let i = 0; i < objects.length; i++) {
    const o = objects[i];
    out.push(o);
    for (let j = 0; j < o.children.length; j++) out.push(o.children[j]);
  }
  return out;
}

export function positionOf(o: ManifestObject, path: (string | number)[] = [], key = false): Position {
  return o.doc.locate([...o.at, ...path], { key });
}

/** A manifest's reference to a secret; the value is read when planning, never stored in a plan. */
export interface SecretRef { env?: string; fromEnv?: string; file?: string }

export function isSecretRef(v: unknown): v is SecretRef {
  return !!v && typeof v === 'object' && !Array.isArray(v) && ['env', 'fromEnv', 'file'].some((k) => k in (v as object));
}

export function describeSecretRef(r: SecretRef): string {
  return r.file !== undefined ? `file ${r.file}` : `env ${r.env ?? r.fromEnv}`;
}
