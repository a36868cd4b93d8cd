import { afterAll, describe, expect, it } from 'vitest';
import { readStackFile, resolveStack, StackFileError } from '../../src/reconciler/manifests/config.js';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';

afterAll(cleanupDirs);

const CA = 'kind: CertificateAuthority\nname: root\nca_pem: x\n';

describe('edgeplane.yaml is read strictly', () => {
  it('a typo\'d key is an error at its place with the key meant, not a stack silently named "default"', () => {
    const dir = manifestDir({ 'edgeplane.yaml': '# the stack\nstak: shop\n', 'a.yaml': CA });
    expect(() => resolveStack(dir)).toThrow(StackFileError);
    const problems = readStackFile(dir, dir).problems.map(formatProblem);
    expect(problems).toEqual(['edgeplane.yaml:2:1: error: stak: is not a setting of edgeplane.yaml (did you mean "stack"?); the settings are stack, api_url, target_name, embedded, variables, environments, policies, safety [stack-file]']);
  });

  it('a wrong type or an invalid name is an error at the value; --stack does not hide a broken file', () => {
    const dir = manifestDir({ 'edgeplane.yaml': 'stack: [shop]\n', 'a.yaml': CA });
    expect(readStackFile(dir, dir).problems.map(formatProblem)).toEqual(['edgeplane.yaml:1:8: error: stack: must be string [stack-file]']);
    expect(() => resolveStack(dir, 'shop')).toThrow(/edgeplane.yaml:1:8/);
    const upper = manifestDir({ 'edgeplane.yaml': 'stack: Shop\n' });
    expect(readStackFile(upper, upper).problems[0].message).toMatch(/must be lower-case letters/);
  });

  it('a manifest written into it, or a second document, is refused with the reason', () => {
    const dir = manifestDir({ 'edgeplane.yaml': 'stack: shop\n---\nkind: CertificateAuthority\n' });
    expect(readStackFile(dir, dir).problems.map((p) => `${p.line}: ${p.message}`)).toEqual([expect.stringMatching(/^3: edgeplane.yaml holds one document/)]);
    const kind = manifestDir({ 'edgeplane.yaml': 'stack: shop\nkind: CertificateAuthority\n' });
    expect(readStackFile(kind, kind).problems[0].message).toMatch(/a manifest\? it goes in a file of its own/);
  });

  it('a valid file names the stack; none at all is "default"', () => {
    expect(resolveStack(manifestDir({ 'edgeplane.yaml': 'stack: shop\n' })).stack).toBe('shop');
    expect(resolveStack(manifestDir({ 'edgeplane.yml': '# nothing\n' })).stack).toBe('default');
    expect(resolveStack(manifestDir({ 'a.yaml': CA }))).toEqual({ stack: 'default', source: 'default' });
  });
});

describe('did you mean', () => {
  const dir = manifestDir({
    'a.yaml': 'kind: CertificateAuthorty\nname: root\n',
    'b.yaml': [
      'kind: FailoverBackend\nname: primary\ndescriptoin: x\nbackends: [standbye]\n',
      'kind: FailoverBackend\nname: standby\nbackends: []\n',
      'kind: HTTPSEdge\nname: web\nhostports: ["a.example:443"]\nroutes:\n  - name: api\n    match_type: PATH_PREFIX\n    match: /\n',
    ].join('---\n'),
  });
  const problems = validateDir({ root: dir, cwd: dir, stack: 'shop' }).problems.map(formatProblem);

  it('for an unknown kind, field and reference name, and an enum value in the wrong case', () => {
    expect(problems).toEqual(expect.arrayContaining([
      expect.stringMatching(/^a.yaml:1:7: .*kind: must be one of .* \(did you mean "CertificateAuthority"\?\)/),
      expect.stringMatching(/^b.yaml:3:1: .*descriptoin: is not a known field \(did you mean "description"\?\)/),
      expect.stringMatching(/^b.yaml:4:12: .*no FailoverBackend named "standbye" in the manifests \(did you mean "standby"\?\)/),
      expect.stringMatching(/routes\[0\].match_type: must be one of .*\(did you mean "path_prefix"\?\)/),
    ]));
  });

  it('says nothing when nothing is close (a wrong suggestion misleads)', () => {
    const far = manifestDir({ 'a.yaml': 'kind: FailoverBackend\nname: p\nzzz: 1\nbackends: [qqqqqq]\n' });
    const msgs = validateDir({ root: far, cwd: far, stack: 's' }).problems.map((p) => p.message);
    expect(msgs.join('\n')).not.toContain('did you mean');
  });
});
