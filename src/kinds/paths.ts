import type { Body } from './types.js';

/** Dotted paths (`provider.github.client_secret`) into stored bodies: write-only fields may nest. */

function isObject(v: unknown): v is Body {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function getPath(body: Body, path: string): unknown {
  let cur: unknown = body;
  for (const part of path.split('.')) {
    if (!isObject(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

/** The object that holds the last segment of `path`, if every step on the way is an object. */
export function holderOf(body: Body, path: string): Body | undefined {
  const parts = path.split('.');
  let cur: unknown = body;
  for (const part of parts.slice(0, -1)) {
    if (!isObject(cur)) return undefined;
    cur = cur[part];
  }
  return isObject(cur) ? cur : undefined;
}

export function hasPath(body: Body, path: string): boolean {
  const holder = holderOf(body, path);
  return !!holder && path.split('.').at(-1)! in holder;
}

/** A copy of `body` without the given paths; only the objects on those paths are copied. */
export function withoutPaths(body: Body, paths: string[]): Body {
  let out = body;
  for (const path of paths) {
    const parts = path.split('.');
    if (!hasPath(out, path)) continue;
    out = { ...out };
    let cur = out;
    for (const part of parts.slice(0, -1)) {
      cur[part] = { ...(cur[part] as Body) };
      cur = cur[part] as Body;
    }
    delete cur[parts.at(-1)!];
  }
  return out;
}

export { formatPath } from '../util/text.js';
