import type { NormalizerName } from './types.js';

const PEM = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/**
 * PEM blocks as the service stores them: the bytes re-encoded in canonical base64 (a block whose
 * last group sets padding bits, `Jud=` for `Juc=`, holds the same bytes, and the service stores the
 * canonical text: compared as written, it planned a replacement on every apply), re-wrapped at 64
 * columns, with one trailing newline.
 */
function pem(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  // A plan normalises each certificate several times (the manifest's, the live one, the raw
  // fields of both): the text is looked up before it is decoded and encoded again.
  const known = pemSeen.get(v);
  if (known !== undefined) return known;
  const out = pemOf(v);
  if (pemSeen.size >= PEM_SEEN_MAX) pemSeen.clear();
  pemSeen.set(v, out);
  return out;
}

/** Normal PEM texts by the text they were made from (at most `PEM_SEEN_MAX`, then started again). */
const pemSeen = new Map<string, string>();
const PEM_SEEN_MAX = 4096;

function pemOf(v: string): string {
  const blocks = [...v.matchAll(PEM)];
  if (!blocks.length) return v;
  const out = blocks.map(([, label, b64]) => {
    let body = b64.replace(/\s+/g, '');
    if (/^[A-Za-z0-9+/]*={0,2}$/.test(body)) body = Buffer.from(body, 'base64').toString('base64');
    const lines = body.match(/.{1,64}/g) ?? [];
    return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
  }).join('');
  return out === v ? v : out; // already so: the same value (nothing to copy)
}

/**
 * The one table of value normalisers that kind and module descriptions name in
 * `reconcile.normalize`. Pure functions of one value: the differ and export both apply them.
 */
export const NORMALIZERS: Record<NormalizerName, (v: unknown) => unknown> = {
  pem,
  lowercase: (v) => (typeof v === 'string' ? v.toLowerCase() : v),
  // A value already in normal form comes back as the same value: the differ then copies nothing.
  'lowercase-items': (v) => (Array.isArray(v) && hasUpperItem(v)
    ? v.map((x) => (typeof x === 'string' ? x.toLowerCase() : x))
    : v),
  'lowercase-keys': (v) =>
    v && typeof v === 'object' && !Array.isArray(v) && hasUpperKey(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k.toLowerCase(), x]))
      : v,
};

// Asked of every body a plan normalises, and most values are lower case already: loops, with no
// closure or key list made per value.
function hasUpperItem(v: unknown[]): boolean {
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x === 'string' && x !== x.toLowerCase()) return true;
  }
  return false;
}

function hasUpperKey(v: object): boolean {
  for (const k in v) if (Object.hasOwn(v, k) && k !== k.toLowerCase()) return true; // Object.keys' keys, with no list
  return false;
}
