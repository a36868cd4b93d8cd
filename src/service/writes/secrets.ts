import { randomBytes } from 'node:crypto';
import type { Db } from '../../store/db.js';
import { KINDS, kindByName } from '../../kinds/registry.js';
import {
  countSealedByOthers, objectsAfter, objectsSealedByOthers, sealedCounts, sealedKeyIds, secretsState, setAllSealed, storeFingerprintKey, writeSealedBody,
} from '../../store/secrets.js';
import { hasSecretFields, isSealed, secretSlots, KeyRingError, SealError, sealBody, sealedValues, Sealer, type KeyRing, type SealPlace } from './sealing.js';

/**
 * The secrets of a running service: the sealer (none without a key ring: secrets are then stored
 * as they come, and the next start with a key ring seals them) and the fingerprint key, held by
 * the service only (docs/edges.md, "Secret fingerprints").
 */
export interface Secrets { sealer?: Sealer; fingerprintKey: Buffer }

/** Where the fingerprint key is bound to when sealed: no object has this id. */
const FINGERPRINT_PLACE: SealPlace = { accountId: '-', objectId: 'secrets_state', path: 'fingerprint_key' };

/**
 * The service's secrets, started once (`startSecrets`): at `buildApp`, or, when the database could
 * not be read then (not there yet, not migrated: `/readyz` says so), at the first request that
 * needs them. A key the ring lacks is never deferred: `buildApp` fails with it.
 */
export class ServiceSecrets {
  #started?: Promise<Secrets>;
  constructor(private readonly db: Db, private readonly ring?: KeyRing, private readonly log?: (msg: string) => void) {}

  static of(secrets: Secrets): ServiceSecrets {
    const s = new ServiceSecrets({} as Db);
    s.#started = Promise.resolve(secrets);
    return s;
  }

  start(): Promise<Secrets> {
    return (this.#started ??= startSecrets(this.db, this.ring, this.log).catch((err: unknown) => {
      this.#started = undefined;
      throw err;
    }));
  }
}

/** Objects sealed or re-wrapped per transaction. */
export const SECRETS_BATCH = 200;

/** What the service's database needs: refused at start-up, naming the key ids the ring lacks. */
export class MissingKeysError extends KeyRingError {
  constructor(readonly missing: string[], ring: boolean) {
    super(`the database holds secrets sealed with key ${missing.join(', ')}, ${ring ? 'which the key ring (EDGEPLANE_SECRETS_KEYS) does not hold' : 'and no key ring is given (EDGEPLANE_SECRETS_KEYS)'}: start with a key ring that holds ${missing.length > 1 ? 'them' : 'it'}`);
  }
}

/**
 * Start-up: refuses a database whose sealed values need a key the ring lacks; with a key ring,
 * seals every value still in plain text (the first start with a key ring, or after a start
 * without one), in batches; without one, notes that plain values may now be written. Makes the
 * fingerprint key on first use.
 */
export async function startSecrets(db: Db, ring: KeyRing | undefined, log?: (msg: string) => void): Promise<Secrets> {
  const missing = (await sealedKeyIds(db)).filter((id) => !ring?.has(id));
  if (missing.length) throw new MissingKeysError(missing, !!ring);
  const sealer = ring && new Sealer(ring);
  const state = await secretsState(db);
  if (!sealer) {
    if (state.all_sealed) await setAllSealed(db, false);
  } else if (!state.all_sealed) {
    const n = await sealPlainValues(db, sealer);
    if (n && log) log(`sealed ${n} secret value${n === 1 ? '' : 's'} stored in plain text with key ${ring.newest.id}`);
    await setAllSealed(db, true);
  }
  return { sealer, fingerprintKey: await fingerprintKey(db, sealer) };
}

/** Seals every secret stored in plain text (read from the kind descriptions), a batch a transaction. */
export async function sealPlainValues(db: Db, sealer: Sealer): Promise<number> {
  const kinds = KINDS.filter(hasSecretFields).map((k) => k.name);
  let after = '';
  let sealed = 0;
  for (;;) {
    const { last, n } = await db.tx(async (q) => {
      const rows = await objectsAfter(q, kinds, after, SECRETS_BATCH);
      let n = 0;
      for (const r of rows) {
        const k = sealBody(sealer, kindByName(r.kind), r.body, r.account_id, r.id);
        if (k) await writeSealedBody(q, r.id, r.body);
        n += k;
      }
      return { last: rows.at(-1)?.id, n };
    }, { unbounded: true });
    sealed += n;
    if (last === undefined) return sealed;
    after = last;
  }
}

async function fingerprintKey(db: Db, sealer: Sealer | undefined): Promise<Buffer> {
  let stored = (await secretsState(db)).fingerprint_key;
  if (!stored) {
    const key = randomBytes(32);
    await storeFingerprintKey(db, sealer ? { ...sealer.seal(key.toString('base64'), FINGERPRINT_PLACE) } : { plain: key.toString('base64') }, 'only');
    stored = (await secretsState(db)).fingerprint_key!;
  }
  if (isSealed(stored)) {
    if (!sealer) throw new MissingKeysError([stored.ep_sealed], false);
    return Buffer.from(sealer.open(stored, FINGERPRINT_PLACE), 'base64');
  }
  const key = Buffer.from(String(stored.plain), 'base64');
  if (sealer) await storeFingerprintKey(db, { ...sealer.seal(key.toString('base64'), FINGERPRINT_PLACE) }, 'over');
  return key;
}

export interface RotateProgress { done: number; remaining: number; refused: SealError[] }

/**
 * Re-wraps every sealed value under the newest key, a batch a transaction, while the service
 * runs (writes meanwhile wait for the batch that holds their object, then carry the re-wrapped
 * value over). Resumable: it only ever looks for objects that still need an old key. A value that
 * does not open (altered) is reported and left as it is. Resolves once no object needs an old key
 * but the refused ones.
 */
export async function rotateSecrets(db: Db, ring: KeyRing, opts: { batch?: number; progress?: (p: RotateProgress) => void } = {}): Promise<RotateProgress> {
  const sealer = new Sealer(ring);
  const newest = ring.newest.id;
  const refused: SealError[] = [];
  let done = 0;
  let after = '';
  for (;;) {
    const last = await db.tx(async (q) => {
      const rows = await objectsSealedByOthers(q, newest, after, opts.batch ?? SECRETS_BATCH);
      for (const r of rows) {
        let changed = false;
        for (const s of sealedValues(r.body)) {
          if (s.sealed.ep_sealed === newest) continue;
          try {
            s.holder[s.key] = sealer.rewrap(s.sealed, { accountId: r.account_id, objectId: r.id, path: s.path });
            changed = true;
          } catch (err) {
            if (!(err instanceof SealError)) throw err;
            refused.push(err);
          }
        }
        if (changed) {
          await writeSealedBody(q, r.id, r.body);
          done++;
        }
      }
      return rows.at(-1)?.id;
    }, { unbounded: true });
    if (last === undefined) break;
    after = last;
    opts.progress?.({ done, remaining: await countSealedByOthers(db, newest), refused });
  }
  // Objects skipped while another transaction held them: taken now that it is done.
  if (refused.length === 0 && (await countSealedByOthers(db, newest)) > 0) {
    await new Promise((r) => setTimeout(r, 50));
    const again = await rotateSecrets(db, ring, opts);
    return { done: done + again.done, remaining: again.remaining, refused: again.refused };
  }
  const state = await secretsState(db);
  if (isSealed(state.fingerprint_key) && state.fingerprint_key.ep_sealed !== newest) {
    await storeFingerprintKey(db, { ...sealer.rewrap(state.fingerprint_key, FINGERPRINT_PLACE) }, 'over');
  }
  return { done, remaining: await countSealedByOthers(db, newest), refused };
}

export interface SecretsStatus {
  /** Sealed values per key id, and whether the key ring holds that key. */
  keys: { key_id: string; values: number; in_ring: boolean; newest: boolean }[];
  /** Secrets stored in plain text (written by a service started without a key ring). */
  plain: number;
}

/** Sealed values per key id, and the values in plain text. */
export async function secretsStatus(db: Db, ring: KeyRing | undefined): Promise<SecretsStatus> {
  const counts = await sealedCounts(db);
  const state = await secretsState(db);
  if (isSealed(state.fingerprint_key)) {
    const at = counts.find((c) => c.key_id === state.fingerprint_key!.ep_sealed);
    if (at) at.values++;
    else counts.push({ key_id: String(state.fingerprint_key.ep_sealed), values: 1 });
  }
  const keys = counts.map((c) => ({ ...c, in_ring: !!ring?.has(c.key_id), newest: ring?.newest.id === c.key_id }));
  for (const k of ring?.keys ?? []) if (!keys.some((x) => x.key_id === k.id)) keys.push({ key_id: k.id, values: 0, in_ring: true, newest: ring!.newest.id === k.id });
  return { keys, plain: state.all_sealed ? 0 : await countPlain(db) };
}

async function countPlain(db: Db): Promise<number> {
  const kinds = KINDS.filter(hasSecretFields).map((k) => k.name);
  let after = '';
  let n = 0;
  for (;;) {
    const rows = await objectsAfter(db, kinds, after, 1000, false);
    for (const r of rows) n += secretSlots(kindByName(r.kind), r.body).filter((s) => typeof s.holder[s.key] === 'string').length;
    if (!rows.length) return n;
    after = rows.at(-1)!.id;
  }
}
