import type { Body, KindDef, UniqueDef } from '../../../kinds/types.js';
import type { PlanContext } from './context.js';

/** Values a kind keeps unique, read from the plain fields' normal form (hostports lower-cased). */
export function uniqueValues(ctx: PlanContext, kind: KindDef, body: Body, u: UniqueDef): string[] {
  try {
    return u.values(ctx.memo.rawFields(kind, body));
  } catch {
    return [];
  }
}

/** Values that identify an object for adoption: declared collision keys and unique values. */
export function identifyingKeys(ctx: PlanContext, kind: KindDef, body: Body): string[] {
  const n = ctx.memo.rawFields(kind, body);
  const out: string[] = [];
  for (const f of kind.collisionKeys ?? []) {
    const v = n[f];
    for (const x of Array.isArray(v) ? v : v === undefined ? [] : [v]) out.push(`${f}=${JSON.stringify(x)}`);
  }
  for (const u of kind.uniques ?? []) for (const v of uniqueValues(ctx, kind, body, u)) out.push(`${u.scope}=${v}`);
  return out;
}
