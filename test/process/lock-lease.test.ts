import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport } from '../../src/client/transport.js';
import { runCli, startCli, startServe, type Served } from '../helpers/cli.js';
import { cleanupDirs, manifestDir, tempDir } from '../helpers/reconcile.js';

/**
 * The stack lock's lease, on real processes through `serve` (issue #35, #42): a killed apply's
 * lock is given up within about 15 s with the default TTL (no EDGEPLANE_LOCK_TTL here); a release
 * by force stops the apply holding it (exit 5), not a finished exit 0; a holder is printable text.
 */
/** `n` failover backends: enough steps that an apply at parallelism 1 runs for seconds. */
function backends(n: number): string {
  return Array.from({ length: n }, (_, i) => `kind: FailoverBackend\nname: pool-${i}\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n`).join('---\n');
}

// The tests run at the same time, each on a stack of its own: the first spends most of its time
// waiting for the dead holder's lease to run out.
describe('the stack lock lease through serve', { timeout: 240_000, concurrent: true }, () => {
  let served: Served;
  let key: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    const state = tempDir('ep-lease-');
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'lease', '--json', '--state', state]);
    expect(created.code, created.stderr).toBe(0);
    key = JSON.parse(created.stdout).api_key;
    served = await startServe(['--state', state]);
    env = { EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: key, EDGEPLANE_LOCK_TTL: undefined } as unknown as Record<string, string>;
  }, 120_000);
  afterAll(async () => {
    await served?.stop();
    cleanupDirs();
  });

  it('an apply after a SIGKILLed apply proceeds within 20 s (the default lease)', async () => {
    const dir = manifestDir({ 'all.yaml': backends(60) });
    const first = startCli(['apply', dir, '--stack', 'killed', '--auto-approve', '--parallelism', '1'], { env });
    await first.waitFor(/\[ ?\d+\/\d+\] done/, { timeoutMs: 120_000 });
    first.child.kill('SIGKILL');
    await first.exited;
    const t0 = performance.now();
    const next = await runCli(['apply', dir, '--stack', 'killed', '--auto-approve'], { env });
    const waited = performance.now() - t0;
    expect(next.code, next.stdout + next.stderr).toBe(0);
    expect(next.stderr).toContain('stack "killed" is locked by'); // it did wait for the dead holder's lock…
    expect(waited).toBeLessThan(20_000); // …for less than 20 s, not the old 60 s TTL
  });

  it('lock release --force of a live lock: the apply holding it stops within seconds and exits 5, not 0', async () => {
    const dir = manifestDir({ 'all.yaml': backends(400) });
    const first = startCli(['apply', dir, '--stack', 'forced', '--auto-approve', '--parallelism', '1'], { env });
    await first.waitFor(/\[ ?\d+\/\d+\] done/, { timeoutMs: 120_000 });
    const forced = await runCli(['lock', 'release', '--stack', 'forced', '--force'], { env });
    expect(forced.code, forced.stderr).toBe(0);
    const t0 = performance.now();
    const code = await first.exited;
    const took = performance.now() - t0;
    expect(code, first.out()).toBe(5);
    expect(first.out()).toContain('the lock on stack "forced" was lost (it expired or was released by force): stopping');
    expect(first.out()).toMatch(/apply (stopped|done, but)/);
    expect(took).toBeLessThan(8_000); // a beat every 2 s, and the steps in flight finished
  });

  it("a holder with ESC, LF or a bidi control is refused with a clear 400; the CLI's own is made printable", async () => {
    const client = new ApiClient(httpTransport(served.url, key));
    for (const holder of ['evil\u001b]0;owned\u0007', 'ci\n::warning::owned', 'x\u202Ey']) {
      const res = await client.exchange('POST', '/stack_locks', { stack: 'printed', holder });
      expect(res.status, JSON.stringify(holder)).toBe(400);
      expect((res.body as { error_code: string; msg: string }).error_code).toBe('ERR_VALIDATION');
      expect((res.body as { msg: string }).msg).toContain('holder: text may hold printable characters only');
    }
    // The CLI's own holder is made printable from whatever the environment says.
    const dir = manifestDir({ 'all.yaml': backends(1) });
    const applied = await runCli(['apply', dir, '--stack', 'printed', '--auto-approve'], { env: { ...env, USER: 'ann\u001b[31m\nx' } });
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    await client.close();
  });
});
