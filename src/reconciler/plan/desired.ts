import type { Body } from '../../kinds/types.js';
import { isSecretRef, positionOf, type ManifestObject } from '../manifests/model.js';
import type { ResolvedSecret } from '../manifests/secrets.js';
import { namedTarget } from '../manifests/schema.js';
import { isName, refValues, secretValues } from '../manifests/validate.js';
import type { DesiredObject } from './state.js';
import type { RefToken, SecretToken } from './tokens.js';

function setAt(body: Body, path: (string | number)[], value: unknown) {
  let holder = body as Record<string | number, unknown>;
  for (const seg of path.slice(0, -1)) holder = holder[seg] as Record<string | number, unknown>;
  holder[path[path.length - 1]] = value;
}

/**
 * Valid manifest objects → desired objects: names become `RefToken`s of the identity they name,
 * secrets `SecretToken`s (source and fingerprint, never the value), metadata is split off.
 */
export function buildDesired(objects: ManifestObject[], secrets: Map<string, ResolvedSecret>): DesiredObject[] {
  const out: DesiredObject[] = [];
  const one = (o: ManifestObject) => {
    const body = structuredClone(o.body);
    const userMetadata = typeof body.metadata === 'string' ? body.metadata : undefined;
    delete body.metadata;
    for (const r of refValues(o)) {
      if (!isName(r.def, r.value)) continue;
      const token: RefToken = { $ref: `${namedTarget(r.def)!.manifestKind}/${r.value}` };
      setAt(body, r.path, token);
    }
    const fp: Record<string, string> = {};
    for (const s of secretValues(o)) {
      const path = s.path.join('.');
      const resolved = secrets.get(`${o.identity}#${path}`);
      const token: SecretToken = {
        $secret: resolved?.source ?? (isSecretRef(s.value) ? s.value : { literal: '' }),
        fingerprint: resolved?.fingerprint ?? null,
      };
      if (resolved) fp[path] = resolved.fingerprint;
      setAt(body, s.path, token);
    }
    out.push({
      kind: o.kind, identity: o.identity, name: o.name, protect: o.protect, body, userMetadata, fp,
      parentIdentity: o.parent?.identity, embedField: o.parent ? (o.at[o.at.length - 2] as string) : undefined,
      // Found on first read only: positions may need the manifest file parsed again.
      get source() {
        const source = positionOf(o);
        Object.defineProperty(this, 'source', { value: source, writable: true, enumerable: true, configurable: true });
        return source;
      },
    });
    o.children.forEach(one);
  };
  objects.forEach(one);
  return out;
}
