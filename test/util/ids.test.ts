import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { base62, newId } from '../../src/util/ids.js';
import { rfc3339 } from '../../src/util/time.js';

describe('ids', () => {
  it('are prefix + 27 base62 characters and strictly increasing within a process', () => {
    const ids = Array.from({ length: 5000 }, () => newId('ca'));
    for (const id of ids) expect(id).toMatch(/^ca_[0-9A-Za-z]{27}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // Same-millisecond ids keep creation order under plain string comparison.
    expect([...ids].sort()).toEqual(ids);
  });

  it('sort by creation time across milliseconds', async () => {
    const a = newId('x');
    await new Promise((r) => setTimeout(r, 3));
    const b = newId('x');
    expect(a < b).toBe(true);
  });
});

describe('rfc3339', () => {
  it('is UTC with second precision', () => {
    expect(rfc3339(new Date('2026-11-22T01:54:48.987+02:00'))).toBe('2026-11-21T23:54:48Z');
  });
});

describe('base62', () => {
  it('is the 27-digit base62 of the 20 bytes as one big-endian number', () => {
    const reference = (bytes: Uint8Array) => {
      let n = BigInt('0x' + Buffer.from(bytes).toString('hex'));
      let out = '';
      for (let i = 0; i < 27; i++) {
        out = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'[Number(n % 62n)] + out;
        n /= 62n;
      }
      return out;
    };
    const cases = [new Uint8Array(20), new Uint8Array(20).fill(255), Uint8Array.from({ length: 20 }, (_, i) => i)];
    for (let i = 0; i < 500; i++) cases.push(randomBytes(20));
    for (const bytes of cases) expect(base62(bytes)).toBe(reference(bytes));
  });
});
