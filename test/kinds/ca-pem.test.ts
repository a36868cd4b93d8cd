import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { caPemProblem, parseCaPem } from '../../src/kinds/ca-pem.js';
import { ROOT } from '../helpers/cli.js';

const pem = (f: string) => readFileSync(join(ROOT, 'test', 'fixtures', 'certs', f), 'utf8');

describe('CA PEM checks and derived fields, kept by the PEM\'s hash', () => {
  it('a PEM checked again gives the same answer, a valid one and a bad one alike', () => {
    const good = pem('rsa-ca.pem');
    expect(caPemProblem(good)).toBeNull();
    expect(caPemProblem(good)).toBeNull();
    const leaf = pem('leaf.pem');
    const problem = caPemProblem(leaf);
    expect(problem).toMatch(/not a CA/);
    expect(caPemProblem(leaf)).toBe(problem);
    // The same bytes with another line ending are another text: checked on their own.
    expect(caPemProblem(good.replace(/\n/g, '\r\n'))).toBeNull();
  });

  it('the derived fields are the same every time, and each caller gets lists of its own', () => {
    const ec = pem('ec-ca.pem');
    expect(caPemProblem(ec)).toBeNull(); // checked first, as a create is
    const a = parseCaPem(ec);
    a.key_usages.push('changed by a caller');
    a.extended_key_usages.length = 0;
    const b = parseCaPem(ec);
    expect(b.key_usages).not.toContain('changed by a caller');
    expect(b).toEqual({ ...a, key_usages: b.key_usages, extended_key_usages: b.extended_key_usages });
    expect(b.extended_key_usages).toEqual(parseCaPem(ec).extended_key_usages);
    expect(b.subject_common_name).not.toBe('');
  });

  it('a PEM that is not a CA is refused by parseCaPem, cached or not', () => {
    const leaf = pem('leaf.pem');
    expect(() => parseCaPem(leaf)).toThrow(/not checked/);
    caPemProblem(leaf);
    expect(() => parseCaPem(leaf)).toThrow(/not checked/);
  });
});
