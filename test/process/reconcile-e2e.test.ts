import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, SOURCES_CLI, startCli } from '../helpers/cli.js';
import { cleanupDirs, editFile, copyExample, manifestDir, tempDir } from '../helpers/reconcile.js';

/**
 * The reconciler as a user runs it: `edgeplane` processes against the embedded default
 * (--state) and against a `serve` process on PostgreSQL.
 */
afterAll(() => cleanupDirs());

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
    editFile(join(dir, 'https-edge.yaml'), 'Public site and partner API', 'Public site');
    const planFile = join(state, '..', `plan-${randomBytes(3).toString('hex')}.json`);
    const saved = await runCli(['plan', dir, ...at, '--out', planFile, '--detailed-exitcode']);
    expect(saved.code).toBe(2);
    const applied = await runCli(['apply', '--plan', planFile, ...at, '--json']);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    const events = applied.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(events.map((e) => e.event)).toEqual(['start', 'done', 'summary']);
    expect(events[1]).toMatchObject({ step: 'HTTPSEdge/web:update', action: 'update', identity: 'HTTPSEdge/web' });

    editFile(join(dir, 'https-edge.yaml'), 'description: Public site', 'description: Public site v3');
    const stalePlan = planFile.replace('.json', '-2.json');
    expect((await runCli(['plan', dir, ...at, '--out', stalePlan])).code).toBe(0);
    editFile(join(dir, 'https-edge.yaml'), 'description: Public site v3', 'description: Public site v4');
    expect((await runCli(['apply', dir, ...at, '--auto-approve'])).code).toBe(0);
    const stale = await runCli(['apply', '--plan', stalePlan, ...at]);
    expect(stale.code).toBe(4);
    expect(stale.stderr).toMatch(/stale: HTTPSEdge\/web \(edghts_\w+\) changed since the plan was made/);
    // A machine reading the JSON stream learns why too: one error event, with the exit code.
    const staleJson = await runCli(['apply', '--plan', stalePlan, ...at, '--json']);
    expect(staleJson.code).toBe(4);
    const refused = staleJson.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(refused).toEqual([{ event: 'error', error: `${stalePlan} is stale: what it was planned from has changed; run plan again`, stale: [expect.stringMatching(/^HTTPSEdge\/web \(edghts_\w+\) changed since the plan was made/)], exit_code: 4 }]);
    writeFileSync(stalePlan, '{"formatVersion":2}');
    const malformed = await runCli(['apply', '--plan', stalePlan, ...at, '--json']);
    expect(malformed.code).toBe(1);
    expect(JSON.parse(malformed.stdout)).toMatchObject({ event: 'error', exit_code: 1, error: expect.stringContaining("not a plan edgeplane can apply: (the top level) must have required property 'stack'") });
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
    const noneOut = join(tempDir('ep-none-'), 'out');
    expect((await runCli(['export', ...at, '--stack', 'not-this-one', '--out', noneOut])).code).toBe(0);
    expect(existsSync(noneOut)).toBe(false); // nothing written, not even the directory
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

  // These make their own state directory (or none), so they run at the same time: each runs its
  // `edgeplane` processes one after another, which leaves a core idle.
  describe('each on a state directory of its own', { concurrent: true }, () => {
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

    it('a saved --target plan whose steps all wait for others applies nothing and says so (plan exits 2 with --detailed-exitcode)', async () => {
      const state = join(tempDir('ep-waiting-'), 'state');
      const edges = (a: string, b: string) => `kind: HTTPSEdge\nname: a\nhostports: ["${a}"]\n---\nkind: HTTPSEdge\nname: b\nhostports: ["${b}"]\n`;
      const host = (h: string) => `${h}-${randomBytes(4).toString('hex')}.example.com:443`; // hostports are unique service-wide
      const [ha, hshop, hx] = [host('a'), host('shop'), host('x')];
      const dir = manifestDir({ 'edges.yaml': edges(ha, hshop) });
      expect((await runCli(['apply', dir, '--state', state, '--auto-approve'])).code).toBe(0);
      // b takes a's hostport, which a lets go of: b's update waits for a's, outside the target.
      writeFileSync(join(dir, 'edges.yaml'), edges(hx, ha));
      const planned = join(tempDir('ep-waiting-plan-'), 'plan.json');
      const plan = await runCli(['plan', dir, '--state', state, '--target', 'HTTPSEdge/b', '--out', planned, '--detailed-exitcode']);
      expect(plan.code).toBe(2);
      expect(plan.stdout).toContain('Nothing among the targets can be applied alone: 1 step left out');
      const applied = await runCli(['apply', '--plan', planned, '--state', state]);
      expect(applied.code, applied.stderr).toBe(0);
      expect(applied.stdout).toContain('Nothing among the targets can be applied alone: 1 step left out');
    });

    it('an API key is not sent in clear text: plain http:// to another host is refused, and an API URL that does not parse is named', async () => {
      const dir = manifestDir({ 'pool.yaml': 'kind: FailoverBackend\nname: x\nbackends: []\n' });
      const plain = await runCli(['plan', dir], { env: { EDGEPLANE_API_URL: 'http://user:pw@edge-api.example.com', EDGEPLANE_API_KEY: 'ep_k' } });
      expect(plain.code).toBe(1);
      expect(plain.stderr).toContain('http://edge-api.example.com/: plain http:// to another host would send the API key in clear text');
      expect(plain.stderr).not.toContain('pw');
      // A name that only starts like a loopback address is another host.
      const lookalike = await runCli(['plan', dir], { env: { EDGEPLANE_API_URL: 'http://127.0.0.1.attacker.example:8080', EDGEPLANE_API_KEY: 'ep_k' } });
      expect(lookalike.code).toBe(1);
      expect(lookalike.stderr).toContain('plain http:// to another host would send the API key in clear text');
      const garbled = await runCli(['plan', dir], { env: { EDGEPLANE_API_URL: 'edge api', EDGEPLANE_API_KEY: 'ep_k' } });
      expect(garbled.code).toBe(1);
      expect(garbled.stderr).toContain('--api-url (EDGEPLANE_API_URL) is not a URL');
    });

    it('DATABASE_URL set but empty (a secret that did not load) is refused by apply, admin and serve: no embedded database is made', async () => {
      const work = tempDir('ep-empty-db-');
      const dir = manifestDir({ 'pool.yaml': 'kind: FailoverBackend\nname: x\nbackends: []\n' });
      for (const args of [['apply', dir, '--auto-approve'], ['admin', 'accounts', 'list'], ['serve', '--port', '0']]) {
        const r = await runCli(args, { cwd: work, env: { DATABASE_URL: '' } });
        expect([args[0], r.code]).toEqual([args[0], 1]);
        expect(r.stderr).toContain('DATABASE_URL is set but empty');
        expect(readdirSync(work)).toEqual([]);
      }
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

    // The sources through tsx (the dev loop), whatever EDGEPLANE_TEST_CLI says: the build has no
    // loader that could read a tsconfig.
    it("a tsconfig.json beside the manifests (a pull request's) cannot map edgeplane's own imports to its code", async () => {
      const dir = tempDir('ep-tsconfig-');
      const edge = manifestDir({ 'pool.yaml': 'kind: FailoverBackend\nname: x\nbackends: []\n' }, join(dir, 'edge'));
      const marker = join(dir, 'RAN.txt');
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { baseUrl: '.', paths: { commander: ['./pwn.mjs'] } } }));
      const commander = join(import.meta.dirname, '..', '..', 'node_modules', 'commander', 'esm.mjs');
      writeFileSync(join(dir, 'pwn.mjs'), `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\nexport * from ${JSON.stringify(commander)};\n`);
      for (const cwd of [dir, edge]) {
        const r = await runCli(['validate', edge], { cwd, cli: SOURCES_CLI });
        expect(r.code, r.stderr).toBe(0);
        expect(existsSync(marker)).toBe(false);
      }
    });
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
    // One that names no stack is the default stack's: refused too, saying what to add.
    writeFileSync(join(out, 'edgeplane.yaml'), 'safety:\n  threshold: { percent: 50 }\n');
    const unnamed = await runCli(['export', ...at, '--stack', 'small-example', '--out', out]);
    expect(unnamed.code).toBe(1);
    expect(unnamed.stderr).toContain('edgeplane.yaml names no stack, so plans from there are stack "default"\'s, not "small-example"\'s (copies would be made): add `stack: small-example` to it');
    // A file where the directory should be: refused before reading anything, with --force too.
    const file = join(out, 'edgeplane.yaml');
    const notDir = await runCli(['export', ...at, '--stack', 'small-example', '--out', file, '--force']);
    expect(notDir.code).toBe(1);
    expect(notDir.stderr).toContain(`--out ${file}: not a directory`);
    // Its own stack goes in as before.
    writeFileSync(join(out, 'edgeplane.yaml'), 'stack: small-example\n');
    expect((await runCli(['export', ...at, '--stack', 'small-example', '--out', out])).code).toBe(0);
    // validate counts the files that hold errors, not every file it read.
    writeFileSync(join(out, 'broken.yaml'), 'kind: HTTPSEdge\nname: Broken Name\nhostports: 7\n');
    const v = await runCli(['validate', out]);
    expect(v.stdout).toBe('2 errors in 1 file\n');
  });

  it('a stack named like a number, a boolean or null is written quoted by init and export, and reads back as itself', async () => {
    const root = tempDir('ep-numeric-');
    const init = await runCli(['init', join(root, '2024')]);
    expect(init.code, init.stderr).toBe(0);
    expect(readFileSync(join(root, '2024', 'edgeplane.yaml'), 'utf8')).toContain('\nstack: "2024"\n');
    const applied = await runCli(['apply', join(root, '2024'), ...at, '--auto-approve']);
    expect(applied.code, applied.stderr).toBe(0);
    const out = join(root, 'exported');
    const exported = await runCli(['export', ...at, '--stack', '2024', '--out', out]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(readFileSync(join(out, 'edgeplane.yaml'), 'utf8')).toContain('\nstack: "2024"\n');
    const plan = await runCli(['plan', out, ...at, '--detailed-exitcode']);
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    // An earlier export's file of a kind the stack no longer has: emptied by export --force, so the
    // next plan does not make its objects again.
    writeFileSync(join(out, 'failover-backend.yaml'), 'kind: FailoverBackend\nname: gone\nbackends: []\n');
    const again = await runCli(['export', ...at, '--stack', '2024', '--out', out, '--force']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('emptied failover-backend.yaml: the stack has no objects of that kind now');
    expect((await runCli(['plan', out, ...at, '--detailed-exitcode'])).code).toBe(0);
    expect((await runCli(['destroy', out, ...at, '--auto-approve'])).code).toBe(0);
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
