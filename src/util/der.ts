/**
 * A minimal DER reader: what edgeplane reads of an X.509 certificate that node:crypto does not
 * expose (a CA's subject common name as stored, its keyUsage bits). Definite lengths and
 * single-byte tags only, as DER and X.509 have them; anything else throws.
 */
export interface Tlv {
  /** The identifier octet: class (top two bits), constructed (0x20), tag number (low five bits). */
  tag: number;
  contents: Buffer;
}

/** The TLV at `at` in `buf`, and where the next one starts. */
export function readTlv(buf: Buffer, at = 0): Tlv & { next: number } {
  if (at + 2 > buf.length) throw new Error('DER: truncated');
  const tag = buf[at];
  if ((tag & 0x1f) === 0x1f) throw new Error('DER: multi-byte tags are not supported');
  let length = buf[at + 1];
  let start = at + 2;
  if (length & 0x80) {
    const n = length & 0x7f;
    if (n === 0 || n > 4 || start + n > buf.length) throw new Error('DER: bad length');
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + buf[start + i];
    start += n;
  }
  if (start + length > buf.length) throw new Error('DER: truncated');
  return { tag, contents: buf.subarray(start, start + length), next: start + length };
}

/** The TLVs that `contents` (a constructed value's) holds, in order. */
export function childrenOf(contents: Buffer): Tlv[] {
  const out: Tlv[] = [];
  for (let at = 0; at < contents.length;) {
    const { tag, contents: c, next } = readTlv(contents, at);
    out.push({ tag, contents: c });
    at = next;
  }
  return out;
}

/** An OBJECT IDENTIFIER's contents in dotted form. */
export function oidOf(contents: Buffer): string {
  if (contents.length === 0 || contents[contents.length - 1] & 0x80) throw new Error('DER: bad OID');
  const ids: number[] = [];
  let value = 0;
  for (const byte of contents) {
    value = value * 128 + (byte & 0x7f);
    if (!(byte & 0x80)) {
      ids.push(value);
      value = 0;
    }
  }
  // The first subidentifier holds the first two arcs: 40 × first + second (first ≤ 2).
  const first = Math.min(2, Math.floor(ids[0] / 40));
  return [first, ids[0] - 40 * first, ...ids.slice(1)].join('.');
}
