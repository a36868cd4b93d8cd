import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startServe } from '../helpers/cli.js';
import { cleanupDirs, manifestDir, tempDir } from '../helpers/reconcile.js';

const MANIFEST = `kind: HTTPSEdge
name: web
hostports: [secrets-cli-${randomBytes(3).toString('hex')}.example.com:443]
routes:
  - name: hook
    match_type: path_prefix
    match: /hook
    webhook_verification:
      provider: github
      secret: {env: HOOK_SECRET}
`;

function filesUnder(dir: string): Buffer[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [readFileSync(p)];
  });
}

describe('secrets sealed by the embedded service, rotated from the command line', { timeout: 240_000 }, () => {
  afterAll(() => cleanupDirs());

  it('the state directory makes its own key ring; rotate moves every value to a new key; serve refuses a ring without it', async () => {
    const state = tempDir('ep-secrets-');
    const dir = manifestDir({ 'web.yaml': MANIFEST });
    const secret = `hook-${randomBytes(8).toString('hex')}`;
    const applied = await runCli(['apply', dir, '--stack', 'web', '--auto-approve', '--state', state], { env: { HOOK_SECRET: secret } });
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);

    const keysFile = join(state, 'secrets.keys');
    expect(statSync(keysFile).mode & 0o777).toBe(0o600);
    const files = Buffer.concat(filesUnder(state));
    expect(files.includes('/hook'), 'the search finds what is stored in plain text').toBe(true);
    expect(files.includes(secret)).toBe(false);

    const status = await runCli(['admin', 'secrets', 'status', '--json', '--state', state]);
    expect(status.code, status.stderr).toBe(0);
    // The webhook secret and the service's fingerprint key.
    expect(JSON.parse(status.stdout)).toEqual({ keys: [{ key_id: 'state-1', values: 2, in_ring: true, newest: true }], plain: 0 });

    // A new key at the top of a ring that still holds the old one: rotate.
    const newKey = `k2:${randomBytes(32).toString('base64')}`;
    const ringFile = join(tempDir('ep-ring-'), 'keys');
    writeFileSync(ringFile, `# newest first\n${newKey}\n${readFileSync(keysFile, 'utf8')}`, { mode: 0o600 });
    const rotated = await runCli(['admin', 'secrets', 'rotate', '--state', state], { env: { EDGEPLANE_SECRETS_KEYS: ringFile } });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toContain('every sealed value now opens with key k2: older keys may be removed from the key ring');

    // The old key removed: everything opens with k2 alone (given inline).
    const after = await runCli(['admin', 'secrets', 'status', '--json', '--state', state], { env: { EDGEPLANE_SECRETS_KEYS: newKey } });
    expect(after.code, after.stderr).toBe(0);
    expect(JSON.parse(after.stdout)).toEqual({ keys: [{ key_id: 'k2', values: 2, in_ring: true, newest: true }], plain: 0 });
    const plan = await runCli(['plan', dir, '--stack', 'web', '--state', state], { env: { HOOK_SECRET: secret, EDGEPLANE_SECRETS_KEYS: newKey } });
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    expect(plan.stdout).toContain('No changes');

    // Without k2 (the state directory's own ring holds only state-1): refused, naming k2.
    await expect(startServe(['--state', state])).rejects.toThrow(/sealed with key k2, which the key ring \(EDGEPLANE_SECRETS_KEYS\) does not hold/);
    const bad = await runCli(['admin', 'secrets', 'status', '--state', state], { env: { EDGEPLANE_SECRETS_KEYS: 'k2:tooshort' } });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('key k2 is not 32 bytes in base64');
  });
});
