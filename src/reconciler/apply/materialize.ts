import { fingerprintSecret } from '../ownership/marker.js';
import { ownSetting, SERVICE_FINGERPRINT, type Fingerprinter, type SecretSource } from '../manifests/secrets.js';
import { isSecretToken, type SecretToken } from '../plan/tokens.js';
import type { HttpRequest, Step } from '../plan/types.js';
import type { KindDef } from '../../kinds/types.js';

/**
 * Turns a step's request as planned into the request sent: `{<identity>.id}` placeholders become
 * the ids that earlier creates returned, secret tokens become the secret's value (read now, from
 * its source, and checked against the fingerprint the plan was made with).
 */
export interface SecretLookup {
  /** The value for the secret at `path` of `identity`, or an error message. */
  value(identity: string, path: string, token: SecretToken): string;
}

export class StaleSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StaleSecretError';
  }
}

const PLACEHOLDER = /\{([^{}]+)\.id\}/g;
const WHOLE_PLACEHOLDER = /^\{([^{}]+)\.id\}$/;

export function materializeRequest(step: Step, ids: ReadonlyMap<string, string>, secrets: SecretLookup): HttpRequest {
  const idOf = (identity: string): string => {
    const id = ids.get(identity);
    if (!id) throw new Error(`${step.id}: the id of ${identity} is not known (its create did not run)`);
    return id;
  };
  const path = step.request.path.replace(PLACEHOLDER, (_, identity: string) => idOf(identity));
  // Secret paths are relative to the object: a module PUT's body sits under the module's name.
  const base = step.action === 'module.put' && step.module ? [step.module] : [];
  const walk = (v: unknown, at: string[]): unknown => {
    if (typeof v === 'string') {
      const m = WHOLE_PLACEHOLDER.exec(v);
      return m ? idOf(m[1]) : v;
    }
    if (isSecretToken(v)) return secrets.value(step.object.identity, at.join('.'), v);
    if (Array.isArray(v)) return v.map((x) => walk(x, at));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, [...at, k])]));
    return v;
  };
  return { method: step.request.method, path, ...(step.request.body === undefined ? {} : { body: walk(step.request.body, base) }) };
}

/** Secrets resolved while planning from the manifests (`apply DIR`): nothing to read again. */
export function secretsFromMap(map: ReadonlyMap<string, { value: string; fingerprint: string }>): SecretLookup {
  return {
    value(identity, path, token) {
      const s = map.get(`${identity}#${path}`);
      if (!s) throw new Error(`${identity}: no value for the secret ${path}`);
      if (token.fingerprint && s.fingerprint !== token.fingerprint) throw new StaleSecretError(`${identity}: the secret ${path} changed while applying`);
      return s.value;
    },
  };
}

export interface SourceEnv {
  stack: string;
  env: Record<string, string | undefined>;
  /** Reads a `file:` secret; the plan does not know the manifest's directory, so it is relative to cwd. */
  readFile(path: string): string | undefined;
}

/**
 * Secrets of a saved plan (`apply --plan FILE`): read from their source now. A value whose
 * fingerprint differs from the plan's is a stale plan (the secret changed since `plan`); a literal
 * secret from a manifest cannot be recovered from the plan at all. The fingerprints the service
 * made (`k:`) are asked of it again for the values read now, all at once (`tokens`: every secret
 * of the plan); local ones are computed here.
 */
export async function secretsFromSources(src: SourceEnv, tokens: { identity: string; path: string; token: SecretToken }[] = [], fingerprint?: Fingerprinter): Promise<SecretLookup> {
  const read = (identity: string, path: string, token: SecretToken): { value: string; where: string } => {
    const source = token.$secret as SecretSource | 'stored';
    let value: string | undefined;
    let where: string;
    if (source === 'stored' || 'literal' in source) {
      const at = source === 'stored' ? 'the live object' : source.literal;
      throw new Error(`${identity}: the secret ${path} was written literally in the manifest (${at}); a saved plan never holds secrets — move it to {env: NAME} or apply from the manifests directory`);
    }
    if (source.file !== undefined) {
      where = `file ${source.file}`;
      value = src.readFile(source.file);
    } else {
      const name = (source.env ?? source.fromEnv)!;
      if (ownSetting(name)) throw new Error(`${identity}: the secret ${path} names ${name}, edgeplane's own setting: never sent to the service`);
      where = `environment variable ${name}`;
      value = src.env[name];
    }
    if (!token.fingerprint) {
      // Every secret a plan reads is fingerprinted: a token without one was not written by plan.
      throw new Error(`${identity}: the secret ${path} (${where}) has no fingerprint: the saved plan was not made as plan makes it (edited?); plan again`);
    }
    if (value === undefined || value === '') {
      const why = source.file !== undefined
        ? `which cannot be read${value === '' ? ' (it is empty)' : ''}: a saved plan names secret files relative to the directory plan ran in; apply from there`
        : `which is ${value === '' ? 'empty' : 'not set'}`;
      throw new Error(`${identity}: the secret ${path} comes from ${where}, ${why}`);
    }
    return { value, where };
  };
  // The service's fingerprints of the values as read now, for the tokens that carry one of its.
  const now = new Map<string, string>();
  const asks: { identity: string; path: string; value: string }[] = [];
  for (const t of tokens) {
    if (!t.token.fingerprint?.startsWith(SERVICE_FINGERPRINT)) continue;
    try {
      asks.push({ identity: t.identity, path: t.path, value: read(t.identity, t.path, t.token).value });
    } catch { /* reported when the value is asked for */ }
  }
  const got = asks.length && fingerprint ? await fingerprint(src.stack, asks) : undefined;
  got?.forEach((fp, i) => now.set(`${asks[i].identity}#${asks[i].path}`, SERVICE_FINGERPRINT + fp));
  return {
    value(identity, path, token) {
      const { value, where } = read(identity, path, token);
      const fp = token.fingerprint!.startsWith(SERVICE_FINGERPRINT) ? now.get(`${identity}#${path}`) : fingerprintSecret(src.stack, identity, path, value);
      if (fp === undefined) throw new StaleSecretError(`${identity}: the secret ${path} (${where}) was fingerprinted by a service, and this target offers no fingerprints; plan again against it`);
      if (fp !== token.fingerprint) {
        throw new StaleSecretError(`${identity}: the secret ${path} (${where}) is not the value the plan was made with`);
      }
      return value;
    },
  };
}

/**
 * Whether `path` (`oidc.client_secret`, `oauth.provider.github.client_secret`) is a secret field of
 * `kind` — one of its, or its modules', write-only paths. A saved plan is a file anyone may edit:
 * a secret token anywhere else would send an environment variable or a file into an ordinary
 * field (a description the API returns to every reader).
 */
export function isSecretPath(kind: KindDef, path: string): boolean {
  const segs = path.split('.');
  const module = kind.modules?.find((m) => m.name === segs[0]);
  const [patterns, rest] = module ? [module.writeOnly ?? [], segs.slice(1)] : [kind.writeOnly ?? [], segs];
  return patterns.some((p) => {
    const want = p.split('.');
    return want.length === rest.length && want.every((w, i) => w === '*' || w === rest[i]);
  });
}

/** Every secret token of a plan, with where it sits: `apply --plan` checks them all before sending anything. */
export function planSecrets(steps: Step[]): { step: Step; path: string; token: SecretToken }[] {
  const out: { step: Step; path: string; token: SecretToken }[] = [];
  for (const step of steps) {
    const walk = (v: unknown, at: string[]) => {
      // Anything shaped like a token (a `$secret` key, with a fingerprint or not): the caller checks where it is and what it holds.
      if (v && typeof v === 'object' && !Array.isArray(v) && '$secret' in v) out.push({ step, path: at.join('.'), token: v as SecretToken });
      else if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...at, String(i)]));
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, [...at, k]);
    };
    walk(step.request.body, step.action === 'module.put' && step.module ? [step.module] : []);
  }
  return out;
}
