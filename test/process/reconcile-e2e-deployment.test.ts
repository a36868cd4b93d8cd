import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startServe } from '../helpers/cli.js';
import { cleanupDirs, editFile, copyExample, EXAMPLE_ENV, tempDir } from '../helpers/reconcile.js';
import { ownSchema } from '../helpers/service.js';

/**
 * The reconciler as a user runs it against a deployment: a vendor prefix of its own, and a
 * `serve` process on PostgreSQL.
 */
afterAll(() => cleanupDirs());

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

        editFile(join(dir, 'https-edge.yaml'), '    compression: {}\n', '');
        editFile(join(dir, 'https-edge.yaml'), 'min_version: "1.3"', 'min_version: "1.2"');
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
