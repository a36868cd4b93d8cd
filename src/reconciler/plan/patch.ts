import jsonpatch from 'fast-json-patch';
import type { Body } from '../../kinds/types.js';
import { display, SENSITIVE } from './changes.js';
import type { Change, PatchOperation, StepPatch } from './types.js';

/** `oidc.client_secret` as a JSON Pointer (RFC 6901): `/oidc/client_secret`. */
function pointer(dotted: string): string {
  return '/' + dotted.split('.').map((k) => k.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
}

/**
 * The changed fields of an object before and after a step, and the RFC 6902 operations that turn
 * one into the other, for programs that read plans (`plan --json`, saved plans). `before` and
 * `after` hold only the fields that change, so the patch applies to the live body as well as to
 * `before`. References read as manifest identities and secrets as "(sensitive)", as in `changes`:
 * a secret that changed keeps the same placeholder, so its `replace` is added from `changes`
 * (a comparison of the placeholders would find nothing to do).
 */
export function stepPatch(before: Body, after: Body, changes: Change[]): StepPatch {
  const b = display(before) as Record<string, unknown>;
  const a = display(after) as Record<string, unknown>;
  const patch = jsonpatch.compare(b, a) as PatchOperation[];
  for (const c of changes) {
    if (!c.sensitive || c.before === undefined || c.after === undefined || !(c.path.split('.')[0] in a)) continue;
    const path = pointer(c.path);
    if (!patch.some((op) => op.path === path || path.startsWith(op.path + '/'))) patch.push({ op: 'replace', path, value: SENSITIVE });
  }
  return { patch, before: b, after: a };
}
