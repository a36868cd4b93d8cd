import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport } from '../../src/client/transport.js';
import { userAtHost } from '../../src/cli/holder.js';
import { embeddedTransport } from '../../src/embedded/embedded.js';
import { runCli, startServe, type Served } from '../helpers/cli.js';
import { cleanupDirs, manifestDir, tempDir } from '../helpers/reconcile.js';

const MANIFEST = 'kind: FailoverBackend\nname: pool\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n';

describe('stack locks from the command line', { timeout: 240_000 }, () => {
  let served: Served;
  let key: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    const state = tempDir('ep-lock-');
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'locks', '--json', '--state', state]);
    expect(created.code, created.stderr).toBe(0);
    key = JSON.parse(created.stdout).api_key;
    served = await startServe(['--state', state]);
    env = { EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: key };
  }, 120_000);
  afterAll(async () => {
    await served?.stop();
    cleanupDirs();
  });

  it('apply waits for a held lock, then exits 5 naming holder, start and how to release; lock status shows it; release needs --force for another\'s', async () => {
    const client = new ApiClient(httpTransport(served.url, key));
    try {
      const taken = await client.takeLock('web', 'ann@elsewhere, pid 1, apply, CI run https://ci.example/run/7', 300);
      expect('lock' in taken).toBe(true);
      const dir = manifestDir({ 'all.yaml': MANIFEST });
      const apply = await runCli(['apply', dir, '--stack', 'web', '--auto-approve', '--lock-timeout', '1s'], { env });
      expect(apply.code, apply.stdout + apply.stderr).toBe(5);
      expect(apply.stderr).toContain('stack "web" is locked by ann@elsewhere, pid 1, apply, CI run https://ci.example/run/7 since');
      expect(apply.stderr).toContain(': waiting up to 1 s (--lock-timeout)');
      expect(apply.stderr).toMatch(/apply: stack "web" is locked by ann@elsewhere, pid 1, apply, CI run https:\/\/ci\.example\/run\/7 since \S+Z \(expires \S+Z unless renewed\); waited (\d+) s \(--lock-timeout\)\. If it is no longer running, release the lock: edgeplane lock release --stack web --api-url \S+ --force/);
      // The wait it reports is the one it made: the timeout, and the last try's time past it (seconds on a loaded machine).
      expect(Number(/waited (\d+) s/.exec(apply.stderr)![1])).toBeGreaterThanOrEqual(1);
      expect(apply.stdout).not.toContain('Plan:'); // nothing planned without the lock

      const status = await runCli(['lock', 'status', '--stack', 'web'], { env });
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/^stack "web": locked by ann@elsewhere, pid 1, apply, CI run https:\/\/ci\.example\/run\/7 since \S+Z, expires \S+Z unless renewed \(stklk_\w+\)\n$/);
      expect((await runCli(['lock', 'status', '--stack', 'api'], { env })).stdout).toBe('stack "api": not locked\n');

      const mine = await runCli(['lock', 'release', '--stack', 'web'], { env });
      expect(mine.code).toBe(5);
      expect(mine.stderr).toContain('not released: it is not yours');
      const forced = await runCli(['lock', 'release', '--stack', 'web', '--force'], { env });
      expect(forced.code, forced.stderr).toBe(0);
      expect(forced.stdout).toContain('released the lock on stack "web" (held by ann@elsewhere');

      // Mine, but its process still runs here (this test's own): releasing it would let another
      // apply write beside it. Once that process is gone, it is released without --force.
      const live = await client.takeLock('web', `${userAtHost(env)}, pid ${process.pid}, apply`, 300);
      expect('lock' in live).toBe(true);
      const running = await runCli(['lock', 'release', '--stack', 'web'], { env });
      expect(running.code, running.stderr).toBe(5);
      expect(running.stderr).toContain(`not released: its process (pid ${process.pid}) is still running on this machine`);
      await client.releaseLock((live as { lock: { id: string } }).lock.id);
      const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
      expect('lock' in await client.takeLock('web', `${userAtHost(env)}, pid ${gone}, apply`, 300)).toBe(true);
      const released = await runCli(['lock', 'release', '--stack', 'web'], { env });
      expect(released.code, released.stderr).toBe(0);
      expect(released.stdout).toContain(`released the lock on stack "web" (held by ${userAtHost(env)}, pid ${gone}, apply`);

      const again = await runCli(['apply', dir, '--stack', 'web', '--auto-approve', '--lock-timeout', '90s'], { env });
      expect(again.code, again.stdout + again.stderr).toBe(0);
      expect(again.stdout).toContain('Apply: 1 done');
      expect(await client.listLocks()).toEqual([]); // released at the end
    } finally {
      await client.close();
    }
  });

  it('embedded: a lock left by a process of this machine that no longer runs is released and taken at once; a live one\'s is waited for', async () => {
    const state = tempDir('ep-lock-embedded-');
    const dir = manifestDir({ 'all.yaml': MANIFEST });
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!; // a pid that ran here and has exited
    const plant = async (pid: number) => {
      // On the directory's own PGlite, as the CLI runs it (which is given no DATABASE_URL).
      const url = process.env.DATABASE_URL;
      delete process.env.DATABASE_URL;
      const client = new ApiClient(await embeddedTransport(state).finally(() => { if (url !== undefined) process.env.DATABASE_URL = url; }));
      try {
        expect('lock' in (await client.takeLock('web', `${userAtHost()}, pid ${pid}, apply`, 300))).toBe(true);
      } finally {
        await client.close();
      }
    };
    await plant(gone);
    const apply = await runCli(['apply', dir, '--stack', 'web', '--auto-approve', '--state', state, '--lock-timeout', '2m']);
    expect(apply.code, apply.stdout + apply.stderr).toBe(0);
    expect(apply.stderr).toContain(`stack "web": the lock of ${userAtHost()}, pid ${gone}, apply was left by a process that no longer runs on this machine: released`);
    expect(apply.stderr).not.toContain('waiting up to');
    expect(apply.stdout).toContain('Apply: 1 done, 0 failed');

    await plant(process.pid); // this test's own process: it runs
    const waits = await runCli(['apply', dir, '--stack', 'web', '--auto-approve', '--state', state, '--lock-timeout', '1s']);
    expect(waits.code, waits.stdout + waits.stderr).toBe(5);
    expect(waits.stderr).not.toContain('no longer runs');
  });

  it('a service that accepts the connection and never answers ends plan with an error naming the URL and the timeout, within twice the timeout', async () => {
    let firstConnection = 0;
    const hole: Server = createServer(() => { firstConnection ||= Date.now(); });
    await new Promise<void>((r) => hole.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(hole.address() as { port: number }).port}`;
    try {
      const dir = manifestDir({ 'all.yaml': MANIFEST });
      const plan = await runCli(['plan', dir], { env: { EDGEPLANE_API_URL: url, EDGEPLANE_API_KEY: 'k', EDGEPLANE_TIMEOUT: '2' } });
      const ended = Date.now();
      expect(plan.code).toBe(1);
      expect(plan.stderr).toMatch(new RegExp(`${url}/[a-z_/]+: no answer within 2 s \\(the request timeout: --timeout or EDGEPLANE_TIMEOUT\\)`));
      expect(firstConnection).toBeGreaterThan(0);
      expect(ended - firstConnection).toBeLessThan(4000);
    } finally {
      hole.close();
    }
  });
});
