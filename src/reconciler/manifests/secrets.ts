import { isUtf8 } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { secret as SECRET } from '../../kinds/fields.js';
import { utf8Bytes } from '../../util/bytes.js';
import { isStorableText } from '../../util/text.js';
import { fingerprintSecret } from '../ownership/marker.js';
import { isSecretRef, positionOf, type ManifestObject, type SecretRef } from './model.js';
import { formatPath, type Problem } from './problems.js';
import { secretValues } from './validate.js';

/** Where a secret comes from, as a plan may record it: a reference, or the place of a literal. */
export type SecretSource = SecretRef | { literal: string };

/**
 * A resolved secret: its source and salted fingerprint. The value itself stays in memory only.
 * `formerly`: for an object renamed (`renamed_from`), the fingerprint the same value has under each
 * identity the object had before, so the plan tells an unchanged secret from a changed one when the
 * marker it compares with still names the old identity.
 */
export interface ResolvedSecret { source: SecretSource; fingerprint: string; value: string; formerly?: Record<string, string> }

/**
 * The service's fingerprints of `secrets` (`ApiClient.fingerprintSecrets`), in order; undefined
 * where the target offers none.
 */
export type Fingerprinter = (stack: string, secrets: { identity: string; path: string; value: string }[]) => Promise<string[] | undefined>;

/** Prefix of a fingerprint the service made under its own key (docs/edges.md, "Secret fingerprints"). */
export const SERVICE_FINGERPRINT = 'k:';

/**
 * Replaces the local fingerprints of resolved secrets (`resolveSecrets`, keyed by data readers
 * can see) with the service's, keyed by what only the service holds: the markers and plans then
 * hold nothing a reader can test a guess against offline. One request per 500 values. Where the
 * target offers none the local ones stay (an empty embedded state, an older service).
 */
export async function keyFingerprints(secrets: Map<string, ResolvedSecret>, stack: string, fingerprint: Fingerprinter): Promise<void> {
  const asks: { identity: string; path: string; value: string }[] = [];
  const puts: ((fp: string) => void)[] = [];
  for (const [key, s] of secrets) {
    if (s.fingerprint.startsWith(SERVICE_FINGERPRINT)) continue;
    const cut = key.lastIndexOf('#');
    const identity = key.slice(0, cut);
    const path = key.slice(cut + 1);
    asks.push({ identity, path, value: s.value });
    puts.push((fp) => { s.fingerprint = SERVICE_FINGERPRINT + fp; });
    for (const former of Object.keys(s.formerly ?? {})) {
      asks.push({ identity: former, path, value: s.value });
      puts.push((fp) => { s.formerly![former] = SERVICE_FINGERPRINT + fp; });
    }
  }
  if (!asks.length) return;
  const got = await fingerprint(stack, asks);
  if (got) got.forEach((fp, i) => puts[i](fp));
}

export interface SecretEnv {
  env: Record<string, string | undefined>;
  /** Base directory of `file:` references is the manifest's own directory; `cwd` turns displayed paths absolute. */
  cwd: string;
}

/**
 * A `{file: …}` secret's value: the file's text, one trailing newline dropped. A secret is sent as
 * text, so a file that is not UTF-8 is refused (`NotTextError`) rather than sent with its bytes
 * replaced: the wrong secret, fingerprinted as if it were right.
 */
export function readSecretFile(path: string): string {
  const bytes = readFileSync(path);
  if (!isUtf8(bytes)) throw new NotTextError();
  return bytes.toString('utf8').replace(/\r?\n$/, '');
}

export class NotTextError extends Error {
  constructor() {
    super('it is not UTF-8 text (a secret is sent as text)');
  }
}

/** What the service refuses in a secret's value (every secret field is `SECRET` in src/kinds/fields.ts), said of the value; or undefined. */
function valueProblem(value: string): string | undefined {
  if (value.length < (SECRET.minLength as number)) return 'is empty (a {file} holding nothing, or only a newline)';
  const bytes = utf8Bytes(value);
  const max = SECRET.maxBytes as number;
  if (bytes > max) return `is ${bytes} bytes, over the ${max} a secret may have`;
  if (!isStorableText(value)) return 'holds U+0000 or an unpaired UTF-16 surrogate';
  return undefined;
}

/**
 * Reads every secret the manifests reference (environment variables, files) and fingerprints it
 * for the stack. Missing variables or files are problems at the reference's position.
 */
/**
 * Environment variables that hold edgeplane's own settings (its API key, its database URL): never
 * a secret of the manifests. A manifest (a pull request's, say) naming one would have the key sent
 * to the service as a route's secret, where the route's configuration takes it further (and the
 * PostgreSQL client's own: PGPASSWORD, PGPASSFILE, PGSSLKEY). Exported
 * secrets use `EDGEPLANE_SECRET_…`, which stays allowed.
 */
export function ownSetting(name: string): boolean {
  return (/^EDGEPLANE_/.test(name) && !/^EDGEPLANE_SECRET_/.test(name)) || name === 'DATABASE_URL' || /^PG(PASSWORD|PASSFILE|SSLKEY)$/.test(name);
}

/** Where a `{file: …}` secret of `o` is read from: relative to its manifest's own directory. */
function secretFilePath(o: ManifestObject, file: string, cwd: string): string {
  return resolve(cwd, dirname(o.doc.file), file);
}

/** Every file the `{file: …}` secrets of `objects` (and their children) name, whether it is there or not, once each. */
export function secretFiles(objects: readonly ManifestObject[], cwd: string): string[] {
  const out = new Set<string>();
  for (const o of objects) {
    for (const x of [o, ...o.children]) {
      for (const s of secretValues(x)) {
        if (isSecretRef(s.value) && typeof s.value.file === 'string' && s.value.file !== '') out.add(secretFilePath(x, s.value.file, cwd));
      }
    }
  }
  return [...out];
}

export function resolveSecrets(objects: ManifestObject[], stack: string, src: SecretEnv): { secrets: Map<string, ResolvedSecret>; problems: Problem[] } {
  const secrets = new Map<string, ResolvedSecret>();
  const problems: Problem[] = [];
  // Each object, then its children (as withChildren lists them, with no list made).
  for (let i = 0; i < objects.length; i++) {
    const o = objects[i];
    resolveOf(o, stack, src, secrets, problems);
    for (let j = 0; j < o.children.length; j++) resolveOf(o.children[j], stack, src, secrets, problems);
  }
  return { secrets, problems };
}

/** One object's secrets, read and fingerprinted into `secrets` (or a problem each). */
function resolveOf(o: ManifestObject, stack: string, src: SecretEnv, secrets: Map<string, ResolvedSecret>, problems: Problem[]) {
  const secretsOf = secretValues(o);
  for (let k = 0; k < secretsOf.length; k++) {
    const s = secretsOf[k];
    const path = s.path.join('.');
    // Positions are found only when needed (a problem, a literal's place): they may mean parsing the file again.
    const pos = () => positionOf(o, s.path);
    let value: string | undefined;
    let source: SecretSource;
    if (isSecretRef(s.value)) {
      source = s.value;
      // A reference the schema refused (`{env: }`, `{file: 123}`): its problem is the schema's; nothing to read.
      const named = [s.value.env, s.value.fromEnv, s.value.file].filter((x) => x !== undefined);
      if (named.length !== 1 || typeof named[0] !== 'string' || named[0] === '') continue;
      const name = s.value.env ?? s.value.fromEnv;
      if (name !== undefined && ownSetting(name)) {
        problems.push({ ...pos(), severity: 'error', path: formatPath([...o.at, ...s.path]), rule: 'secret-invalid', message: `${name} holds edgeplane's own setting, not a secret of the manifests: it is never sent to the service (name another variable)` });
        continue;
      } else if (name !== undefined) {
        value = src.env[name];
        if (value === undefined || value === '') {
          problems.push({ ...pos(), severity: 'error', path: formatPath([...o.at, ...s.path]), rule: 'secret-missing', message: `environment variable ${name} is ${value === '' ? 'empty (a secret must have a value)' : 'not set'}` });
          value = undefined;
        }
      } else {
        const file = secretFilePath(o, s.value.file!, src.cwd);
        // The plan records the file relative to the working directory, where apply reads it.
        source = { file: relative(src.cwd, file) || file };
        try {
          value = readSecretFile(file);
        } catch (err) {
          const why = err instanceof NotTextError ? err.message : (err as NodeJS.ErrnoException).code ?? (err as Error).message;
          problems.push({ ...pos(), severity: 'error', path: formatPath([...o.at, ...s.path]), rule: 'secret-missing', message: `cannot read secret file ${s.value.file}: ${why}` });
        }
      }
    } else {
      const p = pos();
      source = { literal: `${p.file}:${p.line}:${p.col}` };
      value = typeof s.value === 'string' ? s.value : JSON.stringify(s.value);
    }
    if (value === undefined) continue;
    const bad = valueProblem(value);
    if (bad) {
      problems.push({ ...pos(), severity: 'error', path: formatPath([...o.at, ...s.path]), rule: 'secret-invalid', message: `the secret's value ${bad} (the service would refuse it at apply)` });
      continue;
    }
    const resolved: ResolvedSecret = { source, value, fingerprint: fingerprintSecret(stack, o.identity, path, value) };
    if (o.previousIdentities.length) {
      resolved.formerly = {};
      for (const id of o.previousIdentities) resolved.formerly[id] = fingerprintSecret(stack, id, path, value);
    }
    secrets.set(`${o.identity}#${path}`, resolved);
  }
}
