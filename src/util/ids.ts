import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ID_CHARS = 27; // 62^27 > 2^160
let lastMs = 0;
const last = new Uint8Array(20); // 6 bytes of milliseconds, 14 random bytes
/** Random bytes drawn 4 KiB at a time (one call into the CSPRNG per 292 ids, not per id). */
const pool = new Uint8Array(4096);
let poolAt = pool.length;

/**
 * KSUID-like id: `<prefix>_` + 27 base62 characters encoding 48 bits of milliseconds and 112
 * random bits. Ids made in one process are strictly increasing (same millisecond → random part
 * incremented), so sorting by id is sorting by creation: lists page on id and routes keep
 * creation order without a second column. Plain byte arithmetic: this runs on every request
 * (operation ids), and BigInt was measurably slower.
 */
export function newId(prefix: string): string {
  const ms = Date.now();
  if (ms > lastMs) {
    lastMs = ms;
    let t = ms;
    for (let i = 5; i >= 0; i--) {
      last[i] = t % 256;
      t = Math.floor(t / 256);
    }
    if (poolAt + 14 > pool.length) {
      randomFillSync(pool);
      poolAt = 0;
    }
    last.set(pool.subarray(poolAt, (poolAt += 14)), 6);
    last[6] &= 0x7f; // headroom so increments never carry into the time
  } else {
    for (let i = 19; i >= 6; i--) {
      last[i] = (last[i] + 1) & 0xff;
      if (last[i] !== 0) break;
    }
  }
  return `${prefix}_${base62(last)}`;
}

/**
 * Fixed-width base62 of a big-endian byte string (a whole number of 32-bit words), by repeated
 * division of its words: a quarter of the steps of dividing byte by byte (ids are made per request).
 * A remainder times 2^32 plus a word stays below 2^38, exact in a double.
 */
export function base62(bytes: Uint8Array): string {
  const words = WORDS;
  const n = bytes.length >>> 2;
  for (let w = 0; w < n; w++) words[w] = ((bytes[4 * w] << 24) | (bytes[4 * w + 1] << 16) | (bytes[4 * w + 2] << 8) | bytes[4 * w + 3]) >>> 0;
  let out = '';
  for (let d = 0; d < ID_CHARS; d++) {
    let rem = 0;
    for (let w = 0; w < n; w++) {
      const acc = rem * 4294967296 + words[w];
      words[w] = Math.floor(acc / 62);
      rem = acc - words[w] * 62;
    }
    out = ALPHABET[rem] + out;
  }
  return out;
}
const WORDS = new Array<number>(5).fill(0);

export const ID_BODY = '[0-9A-Za-z]{27}';

export function idPattern(prefix: string): string {
  return `^${prefix}_${ID_BODY}$`;
}
