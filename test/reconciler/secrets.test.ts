import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { readSecretFile, resolveSecrets } from '../../src/reconciler/manifests/secrets.js';
import { validateDir } from '../../src/reconciler/pipeline.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';

afterAll(() => cleanupDirs());

const route = (secretFile: string) => `kind: HTTPSEdge
name: web
routes:
  - name: hooks
    match_type: path_prefix
    match: /hooks/
    webhook_verification:
      provider: stripe
      secret: { file: ${secretFile} }
`;

describe('{file: …} secrets', () => {
  it('read the file\'s text, one trailing newline dropped; a file that is not UTF-8 or not there is a problem at the reference', () => {
    const dir = manifestDir({ 'good/edge.yaml': route('s.txt'), 'good/s.txt': 'whsec_é✓\n', 'latin/edge.yaml': route('s.txt'), 'missing/edge.yaml': route('nope.txt') });
    writeFileSync(join(dir, 'latin', 's.txt'), Buffer.from('whsec_\xe9\n', 'latin1'));
    const resolve = (sub: string) => {
      const v = validateDir({ root: join(dir, sub), cwd: dir, stack: 'prod' });
      expect(v.problems.filter((p) => p.severity === 'error')).toEqual([]);
      return resolveSecrets(v.objects, 'prod', { env: {}, cwd: dir });
    };
    const good = resolve('good');
    expect(good.problems).toEqual([]);
    expect([...good.secrets.values()].map((s) => s.value)).toEqual(['whsec_é✓']);
    expect(resolve('latin').problems.map(formatProblem)).toEqual([
      'latin/edge.yaml:9:15: error: routes[0].webhook_verification.secret: cannot read secret file s.txt: it is not UTF-8 text (a secret is sent as text) [secret-missing]',
    ]);
    expect(resolve('missing').problems.map(formatProblem)).toEqual([
      'missing/edge.yaml:9:15: error: routes[0].webhook_verification.secret: cannot read secret file nope.txt: ENOENT [secret-missing]',
    ]);
    expect(() => readSecretFile(join(dir, 'latin', 's.txt'))).toThrow(/not UTF-8/);
  });
});
