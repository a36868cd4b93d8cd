import type { Body, KindDef } from '../../kinds/types.js';
import type { Position } from '../manifests/problems.js';
import type { Marker } from '../ownership/marker.js';

/** One object as the manifests want it; refs are `RefToken`s or raw ids, secrets `SecretToken`s. */
export interface DesiredObject {
  kind: KindDef;
  identity: string;
  name: string;
  parentIdentity?: string;
  /** Identities it may still have live after a rename, most likely first: the plan keeps the object marked with one. */
  previousIdentities?: string[];
  /** Field holding children in the parent (`routes`). */
  embedField?: string;
  protect: boolean;
  /** Request-form fields and modules, `metadata` excluded. */
  body: Body;
  /** The user's own metadata, stored beside the marker. */
  userMetadata?: string;
  /** Salted fingerprints of this object's secrets, by field path. */
  fp: Record<string, string>;
  /** After a rename: the same secrets' fingerprints under each previous identity, by identity, then path. */
  formerFp?: Record<string, Record<string, string>>;
  source?: Position;
}

export type Owner = { type: 'this' } | { type: 'stack'; stack: string } | { type: 'unmanaged' };

/** One object read from the API, in request form, with what its metadata says about ownership. */
export interface ObservedObject {
  kind: KindDef;
  id: string;
  parentId?: string;
  /** Request-form fields and modules; refs are ids, secrets `SecretToken`s from the marker. */
  body: Body;
  /** The stored metadata as read. */
  metadata?: string;
  marker?: Marker;
  userMetadata?: string;
  owner: Owner;
  /** Hash of what the plan reads of the object (`fingerprintObserved`): apply refuses a plan whose objects changed since. */
  fingerprint: string;
  /** The object's ETag as its list gave it (`Prefer: etags`): the version a conditional write names. */
  etag?: string;
}

/** A set of identities as the planner's callers read it (a map by identity serves). */
export interface Identities { has(identity: string): boolean }
