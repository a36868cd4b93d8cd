import { createCipheriv, createDecipheriv, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { Body, KindDef } from '../../kinds/types.js';
import { holderOf } from '../../kinds/paths.js';

/**
 * Secrets at rest (docs/operations.md, "Secrets at rest"): every write-only field a kind or module
 * declares (`writeOnly`) is stored sealed, AES-256-GCM envelope encryption:
 *
 * - each value gets a data key of its own (32 random bytes) that encrypts it;
 * - the data key is stored wrapped (AES-256-GCM again) by a key of the operator's key ring, whose
 *   id is stored beside it (`ep_sealed`);
 * - both layers authenticate the value's place as additional data (account, object id, field
 *   path; the key id too for the wrap): a sealed value copied to another object or field does
 *   not open.
 *
 * Rotation unwraps the data key with the old key and wraps it with the newest; the value's own
 * ciphertext is unchanged (as KMS or Vault transit re-wrap data keys).
 */

/** A sealed value as stored in the body in place of the secret. `v`: base64 of `ENVELOPE`. */
export interface SealedValue { ep_sealed: string; v: string }

/** Where a value sits: what its ciphertext is bound to. `path` is dotted from the body (`oidc.client_secret`). */
export interface SealPlace { accountId: string; objectId: string; path: string }

const FORMAT = 1;
const IV = 12;
const TAG = 16;
const DK = 32;
// ENVELOPE: format (1) | wrap IV (12) | wrapped data key (32) | wrap tag (16) | IV (12) | tag (16) | ciphertext
const HEAD = 1 + IV + DK + TAG + IV + TAG;

/** A key ring key id: letters, digits, `.`, `_`, `-`, at most 64. */
export const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;

export class KeyRingError extends Error {}

/** A sealed value that does not open: tampered with, moved, or sealed by a key the ring lacks. */
export class SealError extends Error {
  constructor(readonly place: SealPlace, readonly keyId: string, why: string) {
    super(`the sealed secret ${place.path} of ${place.objectId} ${why}`);
  }
}

export interface RingKey { id: string; key: Buffer }

/**
 * The operator's keys: the first one seals new values (the newest: put a new key at the top), every
 * one opens what it sealed. Text form, one key a line or separated by commas: `<id>:<base64 of 32
 * bytes>`; `#` starts a comment line.
 */
export class KeyRing {
  readonly keys: readonly RingKey[];
  readonly #byId: Map<string, Buffer>;

  constructor(keys: RingKey[]) {
    if (!keys.length) throw new KeyRingError('the key ring holds no key');
    this.keys = keys;
    this.#byId = new Map();
    for (const k of keys) {
      if (this.#byId.has(k.id)) throw new KeyRingError(`key id ${k.id} is given twice`);
      this.#byId.set(k.id, k.key);
    }
  }

  get newest(): RingKey {
    return this.keys[0];
  }

  has(id: string): boolean {
    return this.#byId.has(id);
  }

  key(id: string): Buffer | undefined {
    return this.#byId.get(id);
  }

  /** Parses the text form; `where` names it in errors (a file, or the variable). */
  static parse(text: string, where: string): KeyRing {
    const keys: RingKey[] = [];
    const lines = text.split(/\r?\n/);
    lines.forEach((line, i) => {
      for (const raw of line.split(',')) {
        const entry = raw.trim();
        if (!entry || entry.startsWith('#')) continue;
        const at = lines.length > 1 ? `${where}:${i + 1}` : where;
        const colon = entry.indexOf(':');
        const id = colon < 0 ? '' : entry.slice(0, colon);
        const b64 = colon < 0 ? '' : entry.slice(colon + 1).trim();
        if (!KEY_ID.test(id)) throw new KeyRingError(`${at}: each key is <id>:<base64 of 32 random bytes>, its id letters, digits, ".", "_" or "-" (at most 64)`);
        const key = Buffer.from(b64, 'base64');
        if (key.length !== DK || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new KeyRingError(`${at}: key ${id} is not 32 bytes in base64 (make one with: openssl rand -base64 32)`);
        keys.push({ id, key });
      }
    });
    if (!keys.length) throw new KeyRingError(`${where}: holds no key (<id>:<base64 of 32 random bytes>, one a line)`);
    return new KeyRing(keys);
  }

  /**
   * EDGEPLANE_SECRETS_KEYS: the keys themselves (`k2:…,k1:…`), or the path of a file holding them.
   * A value that starts like a key (`<id>:`) and names no file is read as keys; anything else is a path.
   */
  static fromSetting(value: string, name = 'EDGEPLANE_SECRETS_KEYS'): KeyRing {
    if (/^\s*[A-Za-z0-9_.-]{1,64}:/.test(value) && !existsSync(value)) return KeyRing.parse(value, name);
    let text: string;
    try {
      text = readFileSync(value, 'utf8');
    } catch (err) {
      throw new KeyRingError(`${name}: cannot read the key ring file ${value} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); give the file's path, or the keys as <id>:<base64>,…`);
    }
    return KeyRing.parse(text, value);
  }

  /** A new key ring of one random key (`id`), in its text form too. */
  static generate(id: string): { ring: KeyRing; text: string } {
    const key = randomBytes(DK);
    return { ring: new KeyRing([{ id, key }]), text: `${id}:${key.toString('base64')}\n` };
  }
}

function aad(place: SealPlace): Buffer {
  return Buffer.from(`edgeplane sealed v${FORMAT}\0${place.accountId}\0${place.objectId}\0${place.path}`);
}

function wrapAad(place: SealPlace, keyId: string): Buffer {
  return Buffer.concat([aad(place), Buffer.from(`\0${keyId}`)]);
}

function gcm(key: Buffer, iv: Buffer, data: Buffer, ad: Buffer): { ct: Buffer; tag: Buffer } {
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(ad);
  const ct = Buffer.concat([c.update(data), c.final()]);
  return { ct, tag: c.getAuthTag() };
}

function ungcm(key: Buffer, iv: Buffer, ct: Buffer, tag: Buffer, ad: Buffer): Buffer {
  const d = createDecipheriv('aes-256-gcm', key, iv);
  d.setAAD(ad);
  d.setAuthTag(tag);
  return Buffer.concat([d.update(ct), d.final()]);
}

export function isSealed(v: unknown): v is SealedValue {
  return typeof v === 'object' && v !== null && typeof (v as SealedValue).ep_sealed === 'string' && typeof (v as SealedValue).v === 'string';
}

interface Parts { wrapIv: Buffer; wrapped: Buffer; wrapTag: Buffer; iv: Buffer; tag: Buffer; ct: Buffer }

/** Seals and opens values with a key ring. */
export class Sealer {
  constructor(readonly ring: KeyRing) {}

  seal(value: string, place: SealPlace): SealedValue {
    const { id, key } = this.ring.newest;
    const dk = randomBytes(DK);
    const wrapIv = randomBytes(IV);
    const wrapped = gcm(key, wrapIv, dk, wrapAad(place, id));
    const iv = randomBytes(IV);
    const sealed = gcm(dk, iv, Buffer.from(value, 'utf8'), aad(place));
    const out = Buffer.concat([Buffer.of(FORMAT), wrapIv, wrapped.ct, wrapped.tag, iv, sealed.tag, sealed.ct]);
    return { ep_sealed: id, v: out.toString('base64') };
  }

  #parts(sealed: SealedValue, place: SealPlace): Parts {
    const buf = Buffer.from(sealed.v, 'base64');
    if (buf.length < HEAD || buf[0] !== FORMAT) throw new SealError(place, sealed.ep_sealed, 'is not a sealed value of this format (damaged?)');
    let o = 1;
    const take = (n: number) => buf.subarray(o, (o += n));
    return { wrapIv: take(IV), wrapped: take(DK), wrapTag: take(TAG), iv: take(IV), tag: take(TAG), ct: buf.subarray(o) };
  }

  #dataKey(sealed: SealedValue, place: SealPlace, p: Parts): Buffer {
    const key = this.ring.key(sealed.ep_sealed);
    if (!key) throw new SealError(place, sealed.ep_sealed, `was sealed with key ${sealed.ep_sealed}, which the key ring does not hold`);
    try {
      return ungcm(key, p.wrapIv, p.wrapped, p.wrapTag, wrapAad(place, sealed.ep_sealed));
    } catch {
      throw new SealError(place, sealed.ep_sealed, `does not open with key ${sealed.ep_sealed}: it was altered, or moved from another object or field`);
    }
  }

  /** The value; a SealError when the key is missing or the value or its place was tampered with. */
  open(sealed: SealedValue, place: SealPlace): string {
    const p = this.#parts(sealed, place);
    const dk = this.#dataKey(sealed, place, p);
    try {
      return ungcm(dk, p.iv, p.ct, p.tag, aad(place)).toString('utf8');
    } catch {
      throw new SealError(place, sealed.ep_sealed, `does not open with key ${sealed.ep_sealed}: it was altered, or moved from another object or field`);
    }
  }

  /**
   * The same value with its data key wrapped by the newest key (itself when it already is). The
   * whole value is opened first: an altered one is refused, never re-wrapped.
   */
  rewrap(sealed: SealedValue, place: SealPlace): SealedValue {
    const { id, key } = this.ring.newest;
    const p = this.#parts(sealed, place);
    const dk = this.#dataKey(sealed, place, p);
    try {
      ungcm(dk, p.iv, p.ct, p.tag, aad(place));
    } catch {
      throw new SealError(place, sealed.ep_sealed, `does not open with key ${sealed.ep_sealed}: it was altered, or moved from another object or field`);
    }
    if (sealed.ep_sealed === id) return sealed;
    const wrapIv = randomBytes(IV);
    const wrapped = gcm(key, wrapIv, dk, wrapAad(place, id));
    const out = Buffer.concat([Buffer.of(FORMAT), wrapIv, wrapped.ct, wrapped.tag, p.iv, p.tag, p.ct]);
    return { ep_sealed: id, v: out.toString('base64') };
  }
}

/** Whether two secrets are the same, in time that does not depend on where they differ. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** One secret slot of a stored body: the object holding it, its key there, and its dotted path from the body. */
export interface SecretSlot { holder: Body; key: string; path: string }

/**
 * The write-only fields of `kind` present in `body` (its own and its modules'), read from the
 * description: the one list of what is secret.
 */
export function secretSlots(kind: KindDef, body: Body): SecretSlot[] {
  const out: SecretSlot[] = [];
  const take = (root: Body, paths: string[] | undefined, prefix: string) => {
    for (const p of paths ?? []) {
      const holder = holderOf(root, p);
      const key = p.split('.').at(-1)!;
      if (holder && key in holder && holder[key] !== undefined && holder[key] !== null) out.push({ holder, key, path: prefix + p });
    }
  };
  take(body, kind.writeOnly, '');
  for (const m of kind.modules ?? []) {
    const mod = body[m.name];
    if (mod && typeof mod === 'object' && !Array.isArray(mod)) take(mod as Body, m.writeOnly, `${m.name}.`);
  }
  return out;
}

/** Whether a kind stores any secret (its own fields or a module's). */
export function hasSecretFields(kind: KindDef): boolean {
  return !!kind.writeOnly?.length || !!kind.modules?.some((m) => m.writeOnly?.length);
}

/**
 * Seals, in place, every secret of `body` still in plain text (a string: the request's value, or
 * one a hook derived); sealed values (carried over from the stored body) are kept as they are.
 * Returns how many were sealed.
 */
export function sealBody(sealer: Sealer, kind: KindDef, body: Body, accountId: string, objectId: string): number {
  let n = 0;
  for (const s of secretSlots(kind, body)) {
    const v = s.holder[s.key];
    if (typeof v !== 'string') continue;
    s.holder[s.key] = sealer.seal(v, { accountId, objectId, path: s.path });
    n++;
  }
  return n;
}

/** Every sealed value anywhere in a stored body, with its dotted path (read without the description: rotation). */
export function sealedValues(body: Body): { holder: Body; key: string; path: string; sealed: SealedValue }[] {
  const out: { holder: Body; key: string; path: string; sealed: SealedValue }[] = [];
  const walk = (obj: Body, prefix: string) => {
    for (const [k, v] of Object.entries(obj)) {
      if (isSealed(v)) out.push({ holder: obj, key: k, path: prefix + k, sealed: v });
      else if (v && typeof v === 'object' && !Array.isArray(v)) walk(v as Body, `${prefix}${k}.`);
    }
  };
  walk(body, '');
  return out;
}
