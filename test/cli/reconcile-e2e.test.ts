import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startCli, startServe } from '../helpers/cli.js';
import { cleanupDirs, copyExample, EXAMPLE_ENV, manifestDir, tempDir } from '../helpers/reconcile.js';
import { ownSchema } from '../helpers/service.js';

/**
 * The reconciler as a user runs it: `edgeplane` processes against the embedded default
 * (--state) and against a `serve` process on PostgreSQL.
 */
afterAll(() => cleanupDirs());

const edit = (file: string, from: string | RegExp, to: string) => {
  const before = readFileSync(file, 'utf8');
  const after = before.replace(from, to);
  expect(after, `edit of ${file}`).not.toBe(before);
  writeFileSync(file, after);
};

describe('bad manifests on the embedded default', { timeout: 120_000 }, () => {
  it('plan and apply print every problem with its position and exit 1, and the state is still usable', async () => {
    const state = tempDir('ep-state-');
    const dir = tempDir('ep-bad-');
    writeFileSync(join(dir, 'edge.yaml'), 'kind: HTTPSEdge\nname: Bad_Name\n');
    for (const args of [['plan', dir, '--state', state], ['apply', dir, '--state', state, '--auto-approve']]) {
      const res = await runCli(args);
      expect(res.code, `${args[0]}: ${res.stdout}${res.stderr}`).toBe(1);
      expect(res.stderr).toMatch(/edge\.yaml:2:7: error: name: must be lower-case/);
    }
    const fine = await runCli(['plan', manifestDir({ 'none.yaml': '' }), '--state', state]);
    expect(fine.code, fine.stderr).toBe(0);
  });

  it('plan --json, plan --markdown and apply --json give the problems on stdout too, for machines and pull-request comments', async () => {
    const state = tempDir('ep-state-');
    const bad = manifestDir({ 'edge.yaml': 'kind: FailoverBackend\nname: x\ndescripton: typo\nbackends: []\n' });
    const json = await runCli(['plan', bad, '--state', state, '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({ valid: false, problems: [expect.objectContaining({ file: expect.stringContaining('edge.yaml'), line: 3, col: 1, rule: 'schema', path: 'descripton' })] });
    const md = await runCli(['plan', bad, '--state', state, '--markdown']);
    expect(md.code).toBe(1);
    expect(md.stdout).toContain('the manifests are not valid (1 error)');
    expect(md.stdout).toMatch(/edge\.yaml:3:1: error: descripton: is not a known field \(did you mean "description"\?\) \[schema\]/);
    const applied = await runCli(['apply', bad, '--state', state, '--json', '--auto-approve']);
    expect(applied.code).toBe(1);
    expect(JSON.parse(applied.stdout.trim().split('\n').pop()!)).toMatchObject({ event: 'problems', problems: [expect.objectContaining({ rule: 'schema' })] });
    // An API that cannot be reached: an error event, not an empty stdout.
    const good = manifestDir({ 'pool.yaml': 'kind: FailoverBackend\nname: x\nbackends: []\n' });
    const down = await runCli(['apply', good, '--json', '--auto-approve'], { env: { EDGEPLANE_API_URL: 'http://127.0.0.1:1', EDGEPLANE_API_KEY: 'ep_x' } });
    expect(down.code).toBe(1);
    expect(JSON.parse(down.stdout.trim().split('\n').pop()!)).toMatchObject({ event: 'error', error: expect.stringContaining('ECONNREFUSED') });
    // Refused before any step (no terminal to confirm on): the stream ends with why, not the plan alone.
    const unconfirmed = await runCli(['apply', good, '--state', state, '--json']);
    expect(unconfirmed.code).toBe(1);
    const events = unconfirmed.stdout.trim().split('\n').map((l) => JSON.parse(l) as { event: string });
    expect(events.map((e) => e.event)).toEqual(['plan', 'error']);
    expect(events[1]).toMatchObject({ error: expect.stringContaining('no terminal to ask for confirmation'), exit_code: 1 });
  });

  it('plan, apply and watch --prune refuse a directory with no manifest file: it would delete the whole stack', async () => {
    const state = tempDir('ep-state-');
    const dir = manifestDir({ 'pools.yaml': 'kind: FailoverBackend\nname: keep-me\nbackends: []\n', 'edgeplane.yaml': 'stack: s\n' });
    expect((await runCli(['apply', dir, '--state', state, '--auto-approve'])).code).toBe(0);
    const empty = manifestDir({ 'edgeplane.yaml': 'stack: s\n' });
    for (const args of [['validate', empty], ['plan', empty], ['apply', empty, '--auto-approve'], ['watch', empty, '--prune']]) {
      const res = await runCli([...args, ...(args[0] === 'validate' ? [] : ['--state', state])]);
      expect(res.code, `${args[0]}: ${res.stdout}${res.stderr}`).toBe(1);
      expect(res.stderr).toContain(`${empty}: no manifest files (.yaml or .yml) here`);
    }
    expect((await runCli(['plan', dir, '--state', state, '--detailed-exitcode'])).code, 'nothing was deleted').toBe(0);
    // On purpose: an empty manifest file.
    const none = manifestDir({ 'edgeplane.yaml': 'stack: s\n', 'none.yaml': '' });
    const deleting = await runCli(['plan', none, '--state', state]);
    expect(deleting.code, deleting.stderr).toBe(0);
    expect(deleting.stdout).toContain('- delete FailoverBackend/keep-me');
  });
});

describe('bad arguments fail before anything starts', { timeout: 120_000 }, () => {
  it('a manifest directory that is not there: validate, plan, apply and watch each say so and exit 1, touching no state', async () => {
    const state = tempDir('ep-state-');
    const missing = join(tempDir('ep-missing-'), 'manifets');
    for (const args of [['validate', missing], ['plan', missing, '--state', state], ['apply', missing, '--state', state, '--auto-approve'], ['watch', missing, '--state', state]]) {
      const res = await runCli(args);
      expect(res.code, `${args[0]}: ${res.stdout}${res.stderr}`).toBe(1);
      expect(res.stderr).toContain(`${missing}: no such directory or file`);
    }
    expect(existsSync(join(state, 'pgdata')), 'the embedded database was not started').toBe(false);
  });

  it('watch refuses a --debounce or --interval that is not a duration, before starting', async () => {
    const state = tempDir('ep-state-');
    const dir = manifestDir({ 'a.yaml': 'kind: FailoverBackend\nname: a\nbackends: []\n' });
    for (const [flag, value, says] of [['--debounce', 'abc', 'whole number of milliseconds'], ['--debounce', '-5', 'whole number of milliseconds'], ['--interval', '0', 'positive number of seconds']]) {
      const res = await runCli(['watch', dir, '--state', state, flag, value]);
      expect(res.code, `${flag} ${value}: ${res.stdout}${res.stderr}`).toBe(1);
      expect(res.stderr).toContain(`${flag} must be a ${says}`);
    }
    expect(existsSync(join(state, 'pgdata'))).toBe(false);
  });
});

// Each CLI process starts tsx and reopens PGlite (~2 s idle, far more on a loaded 2-core machine).
describe('edgeplane apply / plan / export / watch on the embedded default', { timeout: 240_000 }, () => {
  const state = tempDir('ep-state-');
  const dir = copyExample('small');
  const at = ['--state', state];

  it('plans, refuses without confirmation off a terminal, applies, and plans no changes', async () => {
    const plan = await runCli(['plan', dir, ...at, '--detailed-exitcode']);
    expect(plan.code, plan.stderr).toBe(2);
    expect(plan.stdout).toContain('Plan: 5 to create, 0 to update, 0 to delete');

    const refused = await runCli(['apply', dir, ...at]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('--auto-approve');

    const applied = await runCli(['apply', dir, ...at, '--auto-approve']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/\[5\/5\] done/);
    expect(applied.stdout).toContain('Apply: 5 done, 0 failed, 0 skipped (5 steps)');
    expect(applied.stdout).not.toMatch(/\r|\x1b/); // not a terminal: one line per step

    const again = await runCli(['plan', dir, ...at, '--detailed-exitcode']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('No changes.');
  });

  it('applies exactly a saved plan, and refuses a stale one with exit code 4', async () => {
    edit(join(dir, 'https-edge.yaml'), 'Public site and partner API', 'Public site');
    const planFile = join(state, '..', `plan-${randomBytes(3).toString('hex')}.json`);
    const saved = await runCli(['plan', dir, ...at, '--out', planFile, '--detailed-exitcode']);
    expect(saved.code).toBe(2);
    const applied = await runCli(['apply', '--plan', planFile, ...at, '--json']);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    const events = applied.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(events.map((e) => e.event)).toEqual(['start', 'done', 'summary']);
    expect(events[1]).toMatchObject({ step: 'HTTPSEdge/web:update', action: 'update', identity: 'HTTPSEdge/web' });

    edit(join(dir, 'https-edge.yaml'), 'description: Public site', 'description: Public site v3');
    const stalePlan = planFile.replace('.json', '-2.json');
    expect((await runCli(['plan', dir, ...at, '--out', stalePlan])).code).toBe(0);
    edit(join(dir, 'https-edge.yaml'), 'description: Public site v3', 'description: Public site v4');
    expect((await runCli(['apply', dir, ...at, '--auto-approve'])).code).toBe(0);
    const stale = await runCli(['apply', '--plan', stalePlan, ...at]);
    expect(stale.code).toBe(4);
    expect(stale.stderr).toMatch(/stale: HTTPSEdge\/web \(edghts_\w+\) changed since the plan was made/);
  });

  it('blocks deleting more than the safety threshold with exit code 3 unless --force', async () => {
    const many = Array.from({ length: 12 }, (_, i) => `kind: FailoverBackend\nname: pool-${i}\nbackends: []\n`);
    manifestDir({ 'pools.yaml': many.join('---\n') }, dir);
    expect((await runCli(['apply', dir, ...at, '--auto-approve'])).code).toBe(0);
    manifestDir({ 'pools.yaml': many.slice(0, 7).join('---\n') }, dir);
    const blocked = await runCli(['apply', dir, ...at, '--auto-approve']);
    expect(blocked.code).toBe(3);
    expect(blocked.stderr).toContain('--force');
    const forced = await runCli(['apply', dir, ...at, '--auto-approve', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toContain('Plan: 0 to create, 0 to update, 5 to delete');
  });

  it('exports manifests that plan to no changes', async () => {
    const out = tempDir('ep-export-');
    const exported = await runCli(['export', ...at, '--stack', 'small-example', '--out', out]);
    expect(exported.code, exported.stderr).toBe(0);
    // Routes count as objects too: the same number `validate` finds in what was written.
    const count = /exported (\d+) objects of stack "small-example"/.exec(exported.stderr)?.[1];
    const validated = await runCli(['validate', out]);
    expect(validated.stdout).toContain(`, ${count} objects: valid`);
    expect(Number(count)).toBeGreaterThanOrEqual(5); // at least examples/small: a CA, a failover backend, an edge and its two routes
    expect(readFileSync(join(out, 'https-edge.yaml'), 'utf8')).toMatch(/certificate_authority_ids:\n\s+- clients/);
    const plan = await runCli(['plan', out, ...at, '--detailed-exitcode']);
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    // The wrong stack (or none given) exports nothing, and says which stacks have objects.
    const none = await runCli(['export', ...at, '--stack', 'not-this-one']);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain('nothing to export: no objects of stack "not-this-one"; stacks with objects: small-example (give --stack)');
  });

  it('export refuses a directory that already holds manifests, changing nothing, unless --force', async () => {
    const out = copyExample('small');
    const before = readFileSync(join(out, 'https-edge.yaml'), 'utf8');
    const refused = await runCli(['export', ...at, '--stack', 'small-example', '--out', out]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/already holds manifests \(certificate-authority\.yaml, failover-backend\.yaml, https-edge\.yaml\).*--force/);
    expect(readFileSync(join(out, 'https-edge.yaml'), 'utf8')).toBe(before);
    const forced = await runCli(['export', ...at, '--stack', 'small-example', '--out', out, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(join(out, 'https-edge.yaml'), 'utf8')).not.toBe(before);
    expect((await runCli(['plan', out, ...at, '--detailed-exitcode'])).code).toBe(0);
  });

  it('plan, apply and watch take the stack\'s directory, not one file of it (planned alone, it would delete the objects of the others); validate takes a file', async () => {
    const state = tempDir('ep-one-file-');
    const dir = manifestDir({ 'pool.yaml': 'kind: FailoverBackend\nname: x\nbackends: []\n', 'web.yaml': 'kind: FailoverBackend\nname: y\nbackends: []\n', 'edgeplane.yaml': 'stack: s\n' });
    for (const args of [['plan'], ['apply', '--auto-approve'], ['watch']]) {
      const r = await runCli([args[0], join(dir, 'web.yaml'), ...args.slice(1), '--state', state]);
      expect(r.code, args[0]).toBe(1);
      expect(r.stderr).toContain('web.yaml is a file: plan, apply and watch take the directory of the stack\'s manifests');
    }
    expect(existsSync(join(state, 'pgdata'))).toBe(false);
    expect((await runCli(['validate', join(dir, 'web.yaml')])).code).toBe(0);
    // One file is validated among its directory's: its references into the other files resolve,
    // and only its own problems are reported.
    const small = copyExample('small');
    writeFileSync(join(small, 'broken.yaml'), 'kind: FailoverBackend\nname: broken\nbackends: 7\n');
    const one = await runCli(['validate', join(small, 'https-edge.yaml')]);
    expect(one.stderr).toBe('');
    expect(one.stdout).toBe('1 file, 3 objects: valid\n');
    expect(one.code).toBe(0);
    const bad = await runCli(['validate', join(small, 'broken.yaml')]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('1 error in 1 file\n');
  });

  it('watch outlives its directory: deleted, it waits; made again at once (the same inode, often), later saves are applied', async () => {
    const state = tempDir('ep-regen-state-');
    const dir = copyExample('small');
    const saved = tempDir('ep-regen-saved-');
    cpSync(dir, saved, { recursive: true });
    const w = startCli(['watch', dir, '--state', state]);
    try {
      await w.waitFor(/\[run-1\] ok/, { timeoutMs: 90_000 });
      let mark = w.out().length;
      rmSync(dir, { recursive: true, force: true });
      await w.waitFor(/no such directory or file any more; watching for it to come back/, { from: mark });
      await new Promise((r) => setTimeout(r, 1500)); // nothing else holds the process meanwhile
      expect(w.child.exitCode).toBe(null);
      mark = w.out().length;
      cpSync(saved, dir, { recursive: true });
      await w.waitFor(/\] (ok|no changes)/, { from: mark, timeoutMs: 30_000 });
      // Deleted and made again in one go: the file watcher saw the root go, and watches the new one.
      rmSync(dir, { recursive: true, force: true });
      cpSync(saved, dir, { recursive: true });
      await new Promise((r) => setTimeout(r, 1500));
      mark = w.out().length;
      writeFileSync(join(dir, 'https-edge.yaml'), readFileSync(join(dir, 'https-edge.yaml'), 'utf8').replace('Public site and partner API', 'After regeneration'));
      await w.waitFor(/update HTTPSEdge\/web/, { from: mark, timeoutMs: 30_000 });
      await w.waitFor(/\] ok in/, { from: mark, timeoutMs: 30_000 });
    } finally {
      w.child.kill('SIGINT');
      await w.exited;
    }
    expect((await runCli(['plan', dir, '--state', state, '--detailed-exitcode'])).code).toBe(0);
  });

  it('EDGEPLANE_API_URL set but empty (a CI secret a fork does not get) is refused, not read as "use the embedded service"', async () => {
    const state = join(tempDir('ep-empty-url-'), 'state');
    const dir = manifestDir({ 'pool.yaml': 'kind: FailoverBackend\nname: x\nbackends: []\n' });
    const r = await runCli(['plan', dir, '--state', state], { env: { EDGEPLANE_API_URL: '', EDGEPLANE_API_KEY: '' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('EDGEPLANE_API_URL is set but empty');
    expect(existsSync(state)).toBe(false);
  });

  it('apply --plan refuses a saved plan edited to send an environment variable into an ordinary field', async () => {
    const state = tempDir('ep-tamper-');
    const dir = manifestDir({ 'pool.yaml': 'kind: FailoverBackend\nname: pool\ndescription: placeholder\nbackends: []\n' });
    const planned = join(tempDir('ep-tamper-plan-'), 'plan.json');
    expect((await runCli(['plan', dir, '--state', state, '--out', planned])).code).toBe(0);
    const tampered = readFileSync(planned, 'utf8').replace('"placeholder"', '{"$secret":{"env":"EDGEPLANE_TEST_CANARY"},"fingerprint":null}');
    expect(tampered).not.toBe(readFileSync(planned, 'utf8'));
    writeFileSync(planned, tampered);
    const r = await runCli(['apply', '--plan', planned, '--state', state], { env: { EDGEPLANE_TEST_CANARY: 'canary-value' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('FailoverBackend/pool: the saved plan holds a secret at description, which is not a secret field of failover backend');
    const exported = await runCli(['export', '--state', state, '--all']);
    expect(exported.stdout + exported.stderr).not.toContain('canary-value');
    expect(exported.stderr).toContain('nothing to export');
  });

  it("a tsconfig.json beside the manifests (a pull request's) cannot map edgeplane's own imports to its code", async () => {
    const dir = tempDir('ep-tsconfig-');
    const edge = manifestDir({ 'pool.yaml': 'kind: FailoverBackend\nname: x\nbackends: []\n' }, join(dir, 'edge'));
    const marker = join(dir, 'RAN.txt');
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { baseUrl: '.', paths: { commander: ['./pwn.mjs'] } } }));
    const commander = join(import.meta.dirname, '..', '..', 'node_modules', 'commander', 'esm.mjs');
    writeFileSync(join(dir, 'pwn.mjs'), `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\nexport * from ${JSON.stringify(commander)};\n`);
    for (const cwd of [dir, edge]) {
      const r = await runCli(['validate', edge], { cwd });
      expect(r.code, r.stderr).toBe(0);
      expect(existsSync(marker)).toBe(false);
    }
  });

  it('export --stack refuses a directory whose edgeplane.yaml names another stack, even with --force', async () => {
    const out = tempDir('edgeplane-other-stack-');
    writeFileSync(join(out, 'edgeplane.yaml'), 'stack: delta\n');
    for (const extra of [[], ['--force']]) {
      const refused = await runCli(['export', ...at, '--stack', 'small-example', '--out', out, ...extra]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`names stack "delta", not "small-example"`);
      expect(readdirSync(out)).toEqual(['edgeplane.yaml']);
    }
    // Its own stack goes in as before.
    writeFileSync(join(out, 'edgeplane.yaml'), 'stack: small-example\n');
    expect((await runCli(['export', ...at, '--stack', 'small-example', '--out', out])).code).toBe(0);
    // validate counts the files that hold errors, not every file it read.
    writeFileSync(join(out, 'broken.yaml'), 'kind: HTTPSEdge\nname: Broken Name\nhostports: 7\n');
    const v = await runCli(['validate', out]);
    expect(v.stdout).toBe('2 errors in 1 file\n');
  });

  it('watch applies real file edits, keeps going through an invalid save, serves the state directory to other commands, and stops cleanly on Ctrl-C', async () => {
    const w = startCli(['watch', dir, ...at]);
    try {
      await w.waitFor(/\[run-1\] (ok|invalid)/, { timeoutMs: 90_000 });
      // Another terminal's plan, while watch holds the directory, goes through watch's service.
      const beside = await runCli(['plan', dir, ...at, '--detailed-exitcode']);
      expect(beside.code, beside.stdout + beside.stderr).toBe(0);
      expect(beside.stdout).toMatch(/ on http:\/\/127\.0\.0\.1:\d+\n/);
      let mark = w.out().length;
      writeFileSync(join(dir, 'broken.yaml'), 'kind: HTTPSEdge\nname: Broken Name\n');
      await w.waitFor(/\[run-\d+\] manifests are not valid/, { from: mark });
      // The problems go to stderr, the run's summary to stdout: either may arrive first.
      await w.waitFor(/broken\.yaml:2:7: error: name:/, { from: mark });
      mark = w.out().length;
      writeFileSync(join(dir, 'broken.yaml'), 'kind: FailoverBackend\nname: from-watch\nbackends: []\n');
      await w.waitFor(/done\s+create FailoverBackend\/from-watch/, { from: mark });
      await w.waitFor(/\[run-\d+\] ok in \d+ ms/, { from: mark });
    } finally {
      w.child.kill('SIGINT');
    }
    expect(await w.exited).toBe(0);
    expect(w.out()).toMatch(/stopped\s*$/);
    const plan = await runCli(['plan', dir, ...at, '--detailed-exitcode']);
    expect(plan.code, plan.stdout).toBe(0);
  });
});

describe('a deployment with its own vendor prefix (session cookie default "acme.")', { timeout: 240_000 }, () => {
  it('plan, apply and export all read defaults as that service fills them: a second apply has nothing to do', async () => {
    const state = tempDir('ep-vendor-');
    const dir = copyExample('full');
    const env = { ...EXAMPLE_ENV, EDGEPLANE_VENDOR_PREFIX: 'acme' };
    const first = await runCli(['apply', dir, '--state', state, '--auto-approve'], { env });
    expect(first.code, first.stderr).toBe(0);
    // The oauth, oidc and saml modules leave cookie_prefix out: the service filled in "acme.".
    const again = await runCli(['apply', dir, '--state', state, '--auto-approve'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('No changes. The live state matches the manifests.');
    const plan = await runCli(['plan', dir, '--state', state, '--detailed-exitcode'], { env });
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    const exported = await runCli(['export', '--state', state, '--stack', 'full-example'], { env });
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toContain('kind: HTTPSEdge');
    expect(exported.stdout).not.toContain('cookie_prefix'); // the default is left out, as written
  });
});

describe.skipIf(!process.env.DATABASE_URL)('edgeplane against a serve process on PostgreSQL', () => {
  it('applies the full example, plans no changes, converges after edits, exports to no changes', async () => {
    const { url, drop } = await ownSchema('ep_e2e_');
    const env = { DATABASE_URL: url.toString() };
    try {
      const served = await startServe([], { env });
      try {
        const created = await runCli(['admin', 'accounts', 'create', '--name', 'e2e', '--json'], { env });
        expect(created.code, created.stderr).toBe(0);
        const key = JSON.parse(created.stdout).api_key as string;
        const target = { EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: key, ...EXAMPLE_ENV };
        const dir = copyExample('full');

        const applied = await runCli(['apply', dir, '--auto-approve', '--parallelism', '4'], { env: target });
        expect(applied.code, applied.stdout + applied.stderr).toBe(0);
        expect(applied.stdout).toContain('Apply: 17 done, 0 failed, 0 skipped');
        expect((await runCli(['plan', dir, '--detailed-exitcode'], { env: target })).code).toBe(0);

        edit(join(dir, 'https-edge.yaml'), '    compression: {}\n', '');
        edit(join(dir, 'https-edge.yaml'), 'min_version: "1.3"', 'min_version: "1.2"');
        const second = await runCli(['apply', dir, '--auto-approve'], { env: target });
        expect(second.code, second.stdout + second.stderr).toBe(0);
        expect(second.stdout).toMatch(/module\.delete HTTPSEdge\/shop\/routes\/storefront compression/);
        expect((await runCli(['plan', dir, '--detailed-exitcode'], { env: target })).code).toBe(0);

        const out = tempDir('ep-export-pg-');
        const exported = await runCli(['export', '--stack', 'full-example', '--out', out], { env: target });
        expect(exported.code, exported.stderr).toBe(0);
        // Exported secrets are environment references: give them the values applied.
        const names = [...exported.stderr.matchAll(/^\s+(EDGEPLANE_SECRET_\w+)\s+\((\S+) (\S+)\)$/gm)];
        expect(names).toHaveLength(3);
        const bySuffix: Record<string, string> = { 'webhook_verification.secret': EXAMPLE_ENV.SHOP_STRIPE_WEBHOOK_SECRET, 'oauth.provider.github.client_secret': EXAMPLE_ENV.SHOP_GITHUB_CLIENT_SECRET, 'oidc.client_secret': EXAMPLE_ENV.SHOP_OIDC_CLIENT_SECRET };
        const secretEnv = Object.fromEntries(names.map((m) => [m[1], bySuffix[m[3]]]));
        const plan = await runCli(['plan', out, '--detailed-exitcode'], { env: { ...target, ...secretEnv } });
        expect(plan.code, plan.stdout + plan.stderr).toBe(0);
      } finally {
        await served.stop();
      }
    } finally {
      await drop();
    }
  }, 240_000);

  it('with DATABASE_URL and no API URL, plan names the database, a plan saved there is refused on the state directory\'s own, and each keeps its key', async () => {
    const { schema, admin, url, drop } = await ownSchema('ep_inproc_');
    url.password = 'not-shown-anywhere';
    try {
      const state = tempDir('ep-inproc-state-');
      const dir = copyExample('small');
      const onPg = { DATABASE_URL: url.toString() };
      const planned = join(tempDir('ep-inproc-plan-'), 'plan.json');
      const plan = await runCli(['plan', dir, '--state', state, '--out', planned], { env: onPg });
      expect(plan.code, plan.stderr).toBe(0);
      const named = new URL(url.toString());
      named.password = '';
      expect(plan.stdout).toContain(`on in-process:${named.toString()}`);
      expect(plan.stdout + plan.stderr + readFileSync(planned, 'utf8')).not.toContain('not-shown-anywhere');
      // Applied on the state directory's PGlite instead, the saved plan is refused: another target.
      const refused = await runCli(['apply', '--plan', planned, '--state', state]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`was planned for in-process:${named.toString()}, not embedded:`);
      // Each database keeps its own key in the directory: going back and forth makes no new ones.
      const keys = () => readdirSync(state).filter((f) => /^embedded.*\.json$/.test(f)).sort().map((f) => JSON.parse(readFileSync(join(state, f), 'utf8')).key_id as string);
      const first = keys();
      expect(first).toHaveLength(2);
      expect((await runCli(['plan', dir, '--state', state], { env: onPg })).code).toBe(0);
      expect((await runCli(['plan', dir, '--state', state])).code).toBe(0);
      expect(keys()).toEqual(first);
      const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${schema}.api_keys`);
      expect(rows[0].n).toBe(1);
    } finally {
      await drop();
    }
  }, 120_000);
});
