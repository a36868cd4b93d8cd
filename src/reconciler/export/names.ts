import { NAME_PATTERN } from '../manifests/schema.js';
import type { ObservedObject } from '../plan/state.js';

const NAME = new RegExp(`^${NAME_PATTERN}$`);

/** A manifest name from free text: lower-case, `[a-z0-9.-]`, at most 100 characters. */
export function slug(text: string): string {
  const s = text.toLowerCase().replace(/[^a-z0-9.]+/g, '-').replace(/^[-.]+|[-.]+$/g, '').replace(/-{2,}/g, '-');
  return s.slice(0, 90).replace(/[-.]+$/, '');
}

/**
 * The name an exported object gets: its manifest name when a stack owns it, else one made from
 * what identifies it to people (collision keys such as a hostport or a route's match, its
 * description), else from its id. `hint`: the name its children's markers give it (an edge whose
 * own marker was cleared). Unique within `used` (a suffix `-2`, `-3` … when taken).
 */
export function uniqueName(o: ObservedObject, used: Set<string>, hint?: string): string {
  let base = o.marker ? o.marker.id.split('/').pop()! : hint ?? '';
  if (!base || !NAME.test(base)) {
    const hints: unknown[] = [];
    for (const u of o.kind.uniques ?? []) {
      try { hints.push(...u.values(o.body)); } catch { /* unreadable: no hint */ }
    }
    hints.push(o.body.description, o.id);
    base = hints.map((h) => (typeof h === 'string' ? slug(h) : '')).find((s) => s && NAME.test(s)) ?? 'object';
  }
  let name = base;
  for (let i = 2; used.has(name); i++) name = `${base}-${i}`;
  used.add(name);
  return name;
}
