import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ID_CHARS = 27; // 62^27 > 2^160
let lastMs = 0;
let lastRand = 0n;

/**
 * KSUID-like id: `<prefix>_` + 27 base62 characters encoding 48 bits of milliseconds and 112
 * random bits. Ids made in one process are strictly increasing (same millisecond → random part
 * incremented), so sorting by id is sorting by creation: lists page on id and routes keep
 * creation order without a second column.
 */
export function newId(prefix: string): string {
  const ms = Date.now();
  let rand: bigint;
  if (ms <= lastMs) {
    rand = lastRand + 1n;
  } else {
    rand = BigInt('0x' + randomBytes(14).toString('hex')) >> 1n; // leave headroom for increments
    lastMs = ms;
  }
  lastRand = rand;
  let n = (BigInt(Math.max(ms, lastMs)) << 112n) | rand;
  let out = '';
  for (let i = 0; i < ID_CHARS; i++) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return `${prefix}_${out}`;
}

export const ID_BODY = '[0-9A-Za-z]{27}';

export function idPattern(prefix: string): string {
  return `^${prefix}_${ID_BODY}$`;
}
