import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { cleanupDirs, copyExample, tempDir } from '../helpers/reconcile.js';

/** In CI, no API URL is refused unless embedded is chosen on purpose (issue 34). */
afterAll(() => cleanupDirs());

// Each test has its own copy of the example and its own state directories: they run at the same
// time, each running its `edgeplane` processes one after another (which leaves a core idle).
describe('the target in CI', { timeout: 240_000, concurrent: true }, () => {
  it('refuses plan, apply, destroy, watch and export without an API URL, and makes no ./state', async () => {
    const dir = copyExample('small');
    const cwd = tempDir('ep-ci-cwd-');
    const env = { GITHUB_ACTIONS: 'true' };
    for (const args of [['plan', dir], ['apply', dir, '--auto-approve'], ['destroy', dir, '--auto-approve'], ['watch', dir], ['export']]) {
      const r = await runCli(args, { env, cwd });
      expect(r.code, `${args[0]}: ${r.stderr}`).toBe(1);
      expect(r.stderr).toContain('GITHUB_ACTIONS is set (a CI job) and no API URL is given');
      expect(r.stderr).toContain('embedded: true');
    }
    expect(existsSync(join(cwd, 'state'))).toBe(false);
    // CI=false is not CI.
    expect((await runCli(['plan', dir, '--state', tempDir('ep-ci-state-')], { env: { CI: 'false' }, cwd })).code).toBe(0);
  });

  it('runs embedded with --state or embedded: true in edgeplane.yaml', async () => {
    const dir = copyExample('small');
    const env = { CI: 'true' };
    const withState = await runCli(['plan', dir, '--state', tempDir('ep-ci-state-')], { env });
    expect(withState.code, withState.stderr).toBe(0);
    writeFileSync(join(dir, 'edgeplane.yaml'), 'embedded: true\n');
    const cwd = tempDir('ep-ci-cwd-');
    const pinned = await runCli(['plan', dir], { env, cwd });
    expect(pinned.code, pinned.stderr).toBe(0);
    expect(pinned.stdout).toContain('Plan: 5 to create');
    expect((await runCli(['apply', dir, '--auto-approve'], { env, cwd })).code).toBe(0);
    // destroy says destroy, not apply.
    const destroyed = await runCli(['destroy', dir, '--auto-approve'], { env, cwd });
    expect(destroyed.code, destroyed.stderr).toBe(0);
    expect(destroyed.stdout).toMatch(/^Destroy: \d+ done, 0 failed/m);
    expect(destroyed.stdout).not.toMatch(/^Apply:/m);
  });

  it('uses the api_url edgeplane.yaml pins, and --api-url over it', async () => {
    const dir = copyExample('small');
    writeFileSync(join(dir, 'edgeplane.yaml'), 'api_url: http://127.0.0.1:9/pinned\n');
    const r = await runCli(['plan', dir, '--timeout', '5s'], { env: { CI: 'true', EDGEPLANE_API_KEY: 'k' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('127.0.0.1:9');
    expect(r.stderr).not.toContain('no API URL is given');
    const flag = await runCli(['plan', dir, '--api-url', 'http://127.0.0.1:7/flag', '--timeout', '5s'], { env: { CI: 'true', EDGEPLANE_API_KEY: 'k' } });
    expect(flag.stderr).toContain('127.0.0.1:7');
    // The file's URL is named only in the note that says the flag wins over it.
    expect(flag.stderr).toContain('note: --api-url (EDGEPLANE_API_URL) http://127.0.0.1:7/flag is used, not api_url http://127.0.0.1:9/pinned of edgeplane.yaml');
    expect(flag.stderr.split('\n').filter((l) => !l.startsWith('note:')).join('\n')).not.toContain('127.0.0.1:9');
    // target_name: the comment names the target by it, and shows no URL (not in its commands either).
    writeFileSync(join(dir, 'edgeplane.yaml'), 'embedded: true\ntarget_name: production\n');
    const state = tempDir('ep-ci-state-');
    const md = await runCli(['plan', dir, '--markdown', '--api-url', 'http://127.0.0.1:7/secret-host', '--timeout', '5s'], { env: { EDGEPLANE_API_KEY: 'k' } });
    expect(md.stderr).toContain('127.0.0.1:7'); // the URL is still the one used
    const named = await runCli(['plan', dir, '--markdown', '--state', state, '--markdown-limit', '2000']);
    expect(named.code, named.stderr).toBe(0);
    expect(named.stdout).toContain('Target: `production`');
    expect(named.stdout).not.toContain(state);
    expect((await runCli(['plan', dir, '--state', state])).stdout).toContain(`on embedded:`);
    writeFileSync(join(dir, 'edgeplane.yaml'), 'api_url: http://127.0.0.1:9/pinned\n');
    const noKey = await runCli(['plan', dir], { env: { CI: 'true' } });
    expect(noKey.stderr).toContain('--api-url needs --api-key');
    const bad = await runCli(['validate', dir]);
    expect(bad.code).toBe(0);
    writeFileSync(join(dir, 'edgeplane.yaml'), 'api_url: edge.example.com\nembeded: true\n');
    const invalid = await runCli(['validate', dir]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('api_url');
    expect(invalid.stderr).toContain('embedded');
  });

  it('--state DIR wins over a pinned api_url (in CI too), saying which api_url is not used', async () => {
    const dir = copyExample('small');
    writeFileSync(join(dir, 'edgeplane.yaml'), 'stack: small-example\napi_url: http://127.0.0.1:9/pinned\n');
    const state = tempDir('ep-ci-state-');
    for (const env of [{}, { CI: 'true' }]) {
      const r = await runCli(['plan', dir, '--state', state], { env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('on embedded:');
      expect(r.stdout).toContain('Plan: 5 to create');
      expect(r.stderr).toContain(`note: --state (EDGEPLANE_STATE) ${state} is used (the embedded service), not api_url http://127.0.0.1:9/pinned of edgeplane.yaml`);
    }
    // EDGEPLANE_STATE is --state: the same.
    const viaEnv = await runCli(['plan', dir], { env: { CI: 'true', EDGEPLANE_STATE: state } });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    expect(viaEnv.stdout).toContain('on embedded:');
    expect(viaEnv.stderr).toContain('not api_url http://127.0.0.1:9/pinned of edgeplane.yaml');
    // --api-url still wins over both.
    const flag = await runCli(['plan', dir, '--state', state, '--api-url', 'http://127.0.0.1:7/flag', '--timeout', '5s'], { env: { EDGEPLANE_API_KEY: 'k' } });
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain('127.0.0.1:7');
  });

  it('api_url and embedded: true together: refused at the file, line and column, by every command that reads it', async () => {
    const dir = copyExample('small');
    writeFileSync(join(dir, 'edgeplane.yaml'), 'stack: small-example\napi_url: https://edge-api.example.com\nembedded: true\n');
    const want = 'edgeplane.yaml:3:1: error: embedded: is set with api_url (line 2): two targets; keep api_url for a stack planned against that API, or embedded: true for a stack meant for the embedded service [stack-file]';
    for (const args of [['validate', dir], ['plan', dir, '--state', tempDir('ep-ci-state-')], ['apply', dir, '--auto-approve', '--state', tempDir('ep-ci-state-')]]) {
      const r = await runCli(args, { env: { CI: 'true' } });
      expect(r.code, `${args[0]}: ${r.stderr}`).toBe(1);
      expect(r.stderr, args[0]).toContain(want);
      expect(r.stdout, args[0]).not.toMatch(/Plan:|Apply:/);
    }
  });
});
