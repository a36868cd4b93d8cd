import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { readSecretFile, resolveSecrets } from '../../src/reconciler/manifests/secrets.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';
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
  it('read the file\'s text, one trailing newline dropped; a file that is not UTF-8 or not there is a problem at the reference', async () => {
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

describe('{env: …} secrets', () => {
  it('an unset variable and an empty one are each a problem at the reference, saying which', async () => {
    const dir = manifestDir({ 'e/edge.yaml': route('x').replace('{ file: x }', '{ env: HOOK_SECRET }') });
    const v = validateDir({ root: join(dir, 'e'), cwd: dir, stack: 'prod' });
    const problems = (env: Record<string, string>) => resolveSecrets(v.objects, 'prod', { env, cwd: dir }).problems.map((p) => p.message);
    expect(problems({})).toEqual(['environment variable HOOK_SECRET is not set']);
    expect(problems({ HOOK_SECRET: '' })).toEqual(['environment variable HOOK_SECRET is empty (a secret must have a value)']);
    expect(problems({ HOOK_SECRET: 'whsec_x' })).toEqual([]);
  });

  it("never edgeplane's own settings (its API key, its database URL): a manifest naming one is a problem, set or not", async () => {
    const env = { EDGEPLANE_API_KEY: 'ep_key', DATABASE_URL: 'postgres://x', EDGEPLANE_SECRET_HOOK: 'whsec_y' };
    for (const name of ['EDGEPLANE_API_KEY', 'EDGEPLANE_API_URL', 'DATABASE_URL', 'PGPASSWORD']) {
      const dir = manifestDir({ 'e/edge.yaml': route('x').replace('{ file: x }', `{ env: ${name} }`) });
      const v = validateDir({ root: join(dir, 'e'), cwd: dir, stack: 'prod' });
      const r = resolveSecrets(v.objects, 'prod', { env, cwd: dir });
      expect(r.problems.map((p) => `${p.rule}: ${p.message}`)).toEqual([`secret-invalid: ${name} holds edgeplane's own setting, not a secret of the manifests: it is never sent to the service (name another variable)`]);
      expect(r.secrets.size).toBe(0);
    }
    // The names export writes stay allowed.
    const dir = manifestDir({ 'e/edge.yaml': route('x').replace('{ file: x }', '{ env: EDGEPLANE_SECRET_HOOK }') });
    const v = validateDir({ root: join(dir, 'e'), cwd: dir, stack: 'prod' });
    expect(resolveSecrets(v.objects, 'prod', { env, cwd: dir }).problems).toEqual([]);
  });
});

describe('secret values the service would refuse', () => {
  it('are problems at the reference when planning, not 400s at apply', async () => {
    const dir = manifestDir({ 'e/edge.yaml': route('x').replace('{ file: x }', '{ env: HOOK_SECRET }') });
    const v = validateDir({ root: join(dir, 'e'), cwd: dir, stack: 'prod' });
    const problems = (value: string) => resolveSecrets(v.objects, 'prod', { env: { HOOK_SECRET: value }, cwd: dir }).problems.map(formatProblem);
    expect(problems('x'.repeat(4096))).toEqual([]);
    const dir2 = manifestDir({ 'f/edge.yaml': route('empty.txt'), 'f/empty.txt': '\n' });
    const v2 = validateDir({ root: join(dir2, 'f'), cwd: dir2, stack: 'prod' });
    expect(resolveSecrets(v2.objects, 'prod', { env: {}, cwd: dir2 }).problems.map(formatProblem)).toEqual([
      'f/edge.yaml:9:15: error: routes[0].webhook_verification.secret: the secret\'s value is empty (a {file} holding nothing, or only a newline) (the service would refuse it at apply) [secret-invalid]',
    ]);
    expect(problems('é'.repeat(2049))).toEqual([
      'e/edge.yaml:9:15: error: routes[0].webhook_verification.secret: the secret\'s value is 4098 bytes, over the 4096 a secret may have (the service would refuse it at apply) [secret-invalid]',
    ]);
    expect(problems('a\u0000b')).toEqual([
      'e/edge.yaml:9:15: error: routes[0].webhook_verification.secret: the secret\'s value holds U+0000 or an unpaired UTF-16 surrogate (the service would refuse it at apply) [secret-invalid]',
    ]);
  });
});

describe('plan with broken manifests and missing secrets', () => {
  it('reports both at once, as validate does', async () => {
    const { planFromState } = await import('../helpers/plan-lists.js');
    const { preparePlan } = await import('../../src/reconciler/plan/prepare.js');
    const edge = route('nope.txt').replace('name: web\n', 'name: web\ndescription: 12\n');
    const dir = manifestDir({ 'edge.yaml': edge });
    const rules = (problems: { rule: string; severity: string }[]) => problems.filter((p) => p.severity === 'error').map((p) => p.rule).sort();
    const r = (await planFromState({ root: dir, cwd: dir, stack: 'prod', env: {} }, {}, 'https://api.example.test'));
    expect(r.plan).toBeUndefined();
    expect(rules(r.problems)).toEqual(['schema', 'secret-missing']);
    // The path of plan and apply: its page reads fail here, and are not awaited once the manifests have errors.
    const client = { target: 'https://api.example.test', counts: {}, listPage: () => { throw new Error('read the service'); } };
    const p = await preparePlan({ root: dir, cwd: dir, stack: 'prod', env: {} }, client as never);
    expect(rules(p.problems)).toEqual(['schema', 'secret-missing']);
    // A reference the schema refuses (`{env: }`, `{file: 123}`) is the schema's problem, not a crash.
    for (const ref of ['{ env: }', '{ file: 123 }']) {
      const bad = manifestDir({ 'edge.yaml': route('x').replace('{ file: x }', ref) });
      const r2 = (await planFromState({ root: bad, cwd: bad, stack: 'prod', env: {} }, {}, 'https://api.example.test'));
      expect(rules(r2.problems)).toEqual(['schema']);
    }
  });
});
