import { afterAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { embeddedTransport } from '../../src/embedded/embedded.js';
import { readLiveState } from '../../src/reconciler/state/read-state.js';
import { DirLock } from '../../src/store/dir-lock.js';
import { runCli, startCli } from '../helpers/cli.js';
import { cleanupDirs, manifestDir, tempDir } from '../helpers/reconcile.js';

const MANIFEST = 'kind: FailoverBackend\nname: pool\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n';

afterAll(() => cleanupDirs());

/** The state directory's objects, read on its own PGlite (as the CLI, which is given no DATABASE_URL). */
async function liveCounts(state: string): Promise<Record<string, number>> {
  const url = process.env.DATABASE_URL;
  delete process.env.DATABASE_URL;
  const client = new ApiClient(await embeddedTransport(state).finally(() => { if (url !== undefined) process.env.DATABASE_URL = url; }));
  try {
    const lists = await readLiveState(client);
    return Object.fromEntries(Object.entries(lists).map(([k, v]) => [k, v.length]));
  } finally {
    await client.close();
  }
}

describe('embedded default: commands that write take turns on one state directory', { timeout: 240_000 }, () => {
  it('an apply waits (--lock-timeout) while another command holds the directory, then applies; it gives up with exit 5 when the wait runs out', async () => {
    const state = tempDir('ep-turns-');
    const dir = manifestDir({ 'all.yaml': MANIFEST });
    const held = DirLock.acquire(state); // another command, serving nobody (this test's process)
    const gives = await runCli(['apply', dir, '--stack', 's', '--auto-approve', '--state', state, '--lock-timeout', '1s']);
    expect(gives.code, gives.stdout + gives.stderr).toBe(5);
    expect(gives.stderr).toContain(`the state directory is in use by process ${process.pid}`);
    expect(gives.stderr).toContain('Waited 1 s (--lock-timeout).');

    const atOnce = await runCli(['apply', dir, '--stack', 's', '--auto-approve', '--state', state, '--lock-timeout', '0']);
    expect(atOnce.code, atOnce.stdout + atOnce.stderr).toBe(5); // as for a stack lock held: no wait, exit 5
    expect(atOnce.stderr).not.toContain('waiting up to');

    const waits = startCli(['apply', dir, '--stack', 's', '--auto-approve', '--state', state, '--lock-timeout', '2m']);
    await waits.waitFor(/in use by process \d+ \(since [^)]+\): waiting up to 120 s \(--lock-timeout\)/);
    held.release();
    expect(await waits.exited, waits.out()).toBe(0);
    expect(waits.out()).toContain('Apply: 1 done, 0 failed');
    expect(await liveCounts(state)).toMatchObject({ backends: 1 });
  });

  it('two applies of one stack started at once on one directory: both succeed, one after the other, and nothing is made twice', async () => {
    const state = tempDir('ep-turns-');
    const dir = manifestDir({ 'all.yaml': MANIFEST });
    const [a, b] = await Promise.all([0, 1].map(() => runCli(['apply', dir, '--stack', 's', '--auto-approve', '--state', state])));
    expect(a.code, a.stdout + a.stderr).toBe(0);
    expect(b.code, b.stdout + b.stderr).toBe(0);
    // One made the backend; the other, planned once its turn came, found nothing to do.
    expect([a.stdout, b.stdout].filter((o) => o.includes('Apply: 1 done')).length).toBe(1);
    expect([a.stdout, b.stdout].filter((o) => o.includes('No changes')).length).toBe(1);
    expect(await liveCounts(state)).toMatchObject({ backends: 1 });
  });
});
