import type { Body, KindDef } from '../../../kinds/types.js';
import type { ObservedObject } from '../state.js';
import { forEachRef, isRefToken, placeholder } from '../tokens.js';
import type { Matched } from './match.js';

/** The id to send for an identity: the existing object's, or a placeholder for one this plan creates. */
export function idOf(m: Matched, identity: string): string {
  const dec = m.matches.get(identity);
  return dec?.o && !dec.replaced ? dec.o.id : placeholder(identity);
}

/** The step that brings an identity into existence in this plan, if any. */
export function creator(m: Matched, identity: string): string | undefined {
  const dec = m.matches.get(identity);
  return dec && (!dec.o || dec.replaced) ? `${identity}:${dec.replaced ? 'replace' : 'create'}` : undefined;
}

/** Request value: references as ids (or placeholders), secret tokens left for apply. */
export function materialize(m: Matched, v: unknown): unknown {
  if (isRefToken(v)) return idOf(m, v.$ref);
  if (Array.isArray(v)) return v.map((x) => materialize(m, x));
  if (v && typeof v === 'object' && !('$secret' in v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, materialize(m, x)]));
  return v;
}

/** Steps creating the objects a body references (in the fields `only` names, or all) must come first. */
export function refDeps(m: Matched, body: Body, only?: string[]): string[] {
  const deps: string[] = [];
  const visit = (identity: string) => {
    const c = creator(m, identity);
    if (c) deps.push(c);
  };
  for (const [k, v] of Object.entries(body)) if (!only || only.includes(k)) forEachRef(v, visit);
  return deps;
}

/** A parent's identity as its marker says (its id when it has none); the live objects are indexed on first use. */
export function parentIdentities(observed: readonly ObservedObject[]): (parentId: string) => string {
  let byId: Map<string, ObservedObject> | undefined;
  return (parentId) => {
    if (!byId) {
      byId = new Map();
      for (const o of observed) if (!byId.has(o.id)) byId.set(o.id, o);
    }
    return byId.get(parentId)?.marker?.id ?? parentId;
  };
}
