import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport } from '../../src/client/transport.js';
import { runCli, startCli, startServe, type Running, type Served } from '../helpers/cli.js';
import { cleanupDirs, duplicates, liveObjects, remaining, tempDir } from '../helpers/reconcile.js';
import { ownSchema } from '../helpers/service.js';

const OBJECTS = 50;
const SECRET = 'hook-secret-for-tests';
const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 'Ann', GIT_AUTHOR_EMAIL: 'ann@example.com', GIT_COMMITTER_NAME: 'Ann', GIT_COMMITTER_EMAIL: 'ann@example.com' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: GIT_ENV }).trim();

/**
 * The stack's manifests at version `v`: `n` backends; each version changes the description of a
 * quarter of them (updates, which the safety threshold lets pass by default: see docs/manifests.md).
 */
function manifests(v: number, n = OBJECTS): string {
  const docs: string[] = [];
  for (let i = 0; i < n; i++) docs.push(`kind: FailoverBackend\nname: pool-${i}\ndescription: v${Math.floor((v + (i % 4)) / 4)}\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n`);
  return docs.join('---\n');
}

/**
 * A proxy in front of the service that holds every PATCH for a while: an apply of 50 updates takes
 * long enough to kill its agent in the middle of it.
 */
async function slowPatchProxy(target: string, delayMs: () => number): Promise<{ url: string; close: () => Promise<void> }> {
  const to = new URL(target);
  const server: Server = createServer((req, res) => {
    const forward = () => {
      const up = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    };
    if (req.method === 'PATCH' && !req.url?.startsWith('/stack_locks')) setTimeout(forward, delayMs());
    else forward();
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r(undefined)); }) };
}

describe.skipIf(!process.env.DATABASE_URL)('the sync agent end to end: two agents, a bare repository, PostgreSQL', { timeout: 600_000 }, () => {
  let schema: Awaited<ReturnType<typeof ownSchema>>;
  let served: Served;
  let proxy: Awaited<ReturnType<typeof slowPatchProxy>>;
  let patchDelay = 0;
  let key: string;
  let client: ApiClient;
  let bare: string;
  let work: string;
  const agents: Running[] = [];

  const env = () => ({ EDGEPLANE_API_URL: proxy.url, EDGEPLANE_API_KEY: key, EDGEPLANE_LOCK_TTL: '3s', HOOK_SECRET: SECRET });
  async function startAgent(drift: 'report' | 'repair'): Promise<{ run: Running; url: string }> {
    const run = startCli(['agent', '--repo', bare, '--ref', 'main', '--path', 'web', '--interval', '1s', '--drift-interval', '2s', '--mode', 'apply', '--drift', drift, '--port', '0', '--webhook-secret-env', 'HOOK_SECRET'], { env: env() });
    agents.push(run);
    const m = await run.waitFor(/edgeplane agent on (http:\/\/\S+) /);
    return { run, url: m[1] };
  }
  async function stop(a: { run: Running }, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    a.run.child.kill(signal);
    return a.run.exited;
  }
  const stackSummary = async () => (await client.send('GET', '/stacks/web')) as any;
  const runs = async () => ((await client.send('GET', '/sync_runs?stack=web&limit=100')) as any).sync_runs as any[];
  async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const v = await fn().catch(() => undefined);
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out: ${what}\n${agents.map((a) => a.out().slice(-3000)).join('\n---\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  function commit(files: Record<string, string | null>, message: string): string {
    for (const [f, text] of Object.entries(files)) {
      if (text === null) rmSync(join(work, f));
      else writeFileSync(join(work, f), text);
    }
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', message);
    git(work, 'push', '-q', 'origin', 'main');
    return git(work, 'rev-parse', 'HEAD');
  }
  async function webhook(url: string, body = JSON.stringify({ ref: 'refs/heads/main' }), signature?: string): Promise<number> {
    const sig = signature ?? 'sha256=' + createHmac('sha256', SECRET).update(body).digest('hex');
    const res = await fetch(`${url}/hooks/git`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': sig } });
    return res.status;
  }
  /** The live stack is exactly the commit's manifests: none twice, and its plan is empty. */
  async function converged(said: string): Promise<void> {
    const live = (await liveObjects(client)).filter((o) => o.identity.startsWith('web:') || o.identity === 'unmanaged');
    expect(duplicates(live), said).toEqual([]);
    expect(live.filter((o) => o.identity === 'unmanaged'), said).toEqual([]);
    expect(await remaining(client, join(work, 'web'), 'web'), said).toEqual([]);
  }

  beforeAll(async () => {
    schema = await ownSchema('ep_agent_');
    const dbEnv = { DATABASE_URL: schema.url.toString() };
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'agents', '--json'], { env: dbEnv });
    expect(created.code, created.stderr).toBe(0);
    key = JSON.parse(created.stdout).api_key;
    served = await startServe([], { env: dbEnv });
    proxy = await slowPatchProxy(served.url, () => patchDelay);
    client = new ApiClient(httpTransport(proxy.url, key));
    const root = tempDir('ep-agent-git-');
    bare = join(root, 'repo.git');
    work = join(root, 'work');
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    execFileSync('git', ['clone', '-q', bare, work], { env: GIT_ENV, stdio: 'pipe' });
    mkdirSync(join(work, 'web'));
    git(work, 'checkout', '-q', '-B', 'main');
  }, 180_000);
  afterAll(async () => {
    for (const a of agents) if (a.child.exitCode === null) a.child.kill('SIGKILL');
    await client?.close();
    await proxy?.close();
    await served?.stop();
    await schema?.drop();
    cleanupDirs();
  });

  it('ten commits by webhook and by polling, drift reported then repaired, a bad, a blocked and an unreachable source, SIGKILL mid-apply', async () => {
    const first = commit({ 'web/edgeplane.yaml': 'stack: web\n', 'web/all.yaml': manifests(0) }, 'version 0');
    const a = await startAgent('report');
    const b = await startAgent('report');
    await until('the first commit applied', async () => (await stackSummary()).live_commit?.sha === first);
    await converged('version 0');

    // A bad signature fetches nothing: 401.
    expect(await webhook(a.url, '{}', 'sha256=' + '0'.repeat(64))).toBe(401);
    expect(await webhook(a.url, '{}', 'nope')).toBe(401);

    const shas = [first];
    for (let v = 1; v < 10; v++) {
      // Some commits add or drop an object, all change every description.
      const sha = commit({ 'web/all.yaml': manifests(v, OBJECTS + (v % 3 === 0 ? 1 : 0)) }, `version ${v}`);
      shas.push(sha);
      const t0 = Date.now();
      if (v % 2) expect(await webhook(v % 4 === 1 ? a.url : b.url)).toBe(202);
      await until(`version ${v} live`, async () => (await stackSummary()).live_commit?.sha === sha);
      expect(Date.now() - t0, `version ${v}: by ${v % 2 ? 'webhook' : 'polling'}`).toBeLessThan(v % 2 ? 5_000 : 8_000);
      await converged(`version ${v}`);
    }
    // Each commit once in the history, applied; none twice.
    const history = await runs();
    for (const [i, sha] of shas.entries()) {
      const mine = history.filter((r) => r.commit?.sha === sha && (r.trigger === 'commit' || r.trigger === 'webhook'));
      expect(mine.map((r) => r.outcome), `version ${i}`).toEqual(['applied']);
    }
    expect(history.some((r) => r.trigger === 'webhook')).toBe(true);

    // Drift made through the API is reported within a drift interval, with a count.
    const live = (await liveObjects(client)).find((o) => o.identity === 'web:FailoverBackend/pool-1')!;
    await client.send('PATCH', `/backends/failover/${live.id}`, { description: 'changed by hand' });
    const drifted = await until('drift reported', async () => { const s = await stackSummary(); return s.status === 'out_of_sync' && s; });
    expect(drifted.drift_count).toBe(1);
    expect((await runs())[0]).toMatchObject({ trigger: 'interval', outcome: 'drifted', drift_count: 1 });
    expect(await stop(a)).toBe(0);
    expect(await stop(b)).toBe(0);

    // With drift: repair it is put back, and recorded.
    const ra = await startAgent('repair');
    const rb = await startAgent('repair');
    await until('drift repaired', async () => (await stackSummary()).status === 'synced');
    expect((await runs())[0]).toMatchObject({ trigger: 'interval', outcome: 'applied', counts: { update: 1 } });
    await converged('repaired');
    const good = shas.at(-1);

    // A commit whose manifests do not validate: recorded as failed; the last good commit stays live; /readyz says why.
    const bad = commit({ 'web/bad.yaml': 'kind: FailoverBackend\nname: bad\nbackendz: []\n' }, 'a typo');
    const failed = await until('the bad commit recorded', async () => (await runs()).find((r) => r.commit?.sha === bad && r.outcome === 'failed'));
    expect(failed.error).toContain('the manifests do not validate');
    expect((await stackSummary()).live_commit.sha).toBe(good);
    const ready = await until('readyz says why', async () => { const r = await fetch(`${ra.url}/readyz`); return r.status === 503 && r.json(); });
    expect(JSON.stringify(ready)).toContain('do not validate');
    expect(duplicates(await liveObjects(client))).toEqual([]);

    // A commit that prunes over the safety threshold: blocked, recorded, nothing deleted.
    const blocked = commit({ 'web/bad.yaml': null, 'web/all.yaml': manifests(9, 5) }, 'drop most');
    const refused = await until('the blocked commit recorded', async () => (await runs()).find((r) => r.commit?.sha === blocked && r.outcome === 'blocked'));
    expect(refused.error).toContain('safety threshold');
    expect((await stackSummary()).live_commit.sha).toBe(good);
    expect((await liveObjects(client)).filter((o) => o.identity.startsWith('web:')).length).toBeGreaterThanOrEqual(OBJECTS);

    // Retried with backoff by both agents, each failure is recorded once.
    expect((await runs()).filter((r) => r.commit?.sha === bad).map((r) => r.outcome)).toEqual(['failed']);
    expect((await runs()).filter((r) => r.commit?.sha === blocked).map((r) => r.outcome)).toEqual(['blocked']);

    // An unreachable source: recorded with its reason; readyz says so.
    const fixed = commit({ 'web/all.yaml': manifests(10) }, 'version 10');
    await until('version 10 live', async () => (await stackSummary()).live_commit?.sha === fixed);
    renameSync(bare, bare + '.gone');
    const unreachable = await until('the unreachable source recorded', async () => (await runs()).find((r) => r.outcome === 'failed' && /cannot fetch/.test(r.error ?? '')));
    expect(unreachable.error).not.toContain(SECRET);
    const notReady = await until('readyz says the source', async () => { const r = await fetch(`${rb.url}/readyz`); return r.status === 503 && r.json(); });
    expect(JSON.stringify(notReady)).toContain('cannot fetch');
    expect((await stackSummary()).live_commit.sha).toBe(fixed);
    renameSync(bare + '.gone', bare);
    await until('ready again', async () => (await fetch(`${rb.url}/readyz`)).status === 200);

    // SIGKILL mid-apply: the other agent takes the stack after the lock's TTL and converges.
    patchDelay = 1000;
    const last = commit({ 'web/all.yaml': manifests(11) }, 'version 11');
    expect(await webhook(ra.url)).toBe(202);
    const holder = await until('an agent applying', async () => (await stackSummary()).lock?.holder as string | undefined);
    const victim = [ra, rb].find((x) => holder.includes(`pid ${x.run.child.pid},`))!;
    const other = victim === ra ? rb : ra;
    await until('some updates made', async () => (await liveObjects(client)).length > 0 && (await remaining(client, join(work, 'web'), 'web')).length < 12);
    victim.run.child.kill('SIGKILL');
    patchDelay = 0;
    await until('the other agent converged', async () => (await stackSummary()).live_commit?.sha === last, 30_000);
    await converged('after SIGKILL');
    expect((await runs()).filter((r) => r.commit?.sha === last && r.outcome === 'applied')).toHaveLength(1);
    // edgeplane sync: the agent syncs at once, and the request is answered.
    const asked = await runCli(['sync', 'web'], { env: env() });
    expect(asked.code, asked.stderr).toBe(0);
    const manual = await until('the manual sync', async () => (await runs()).find((r) => r.trigger === 'manual'));
    expect(manual).toMatchObject({ outcome: 'no_changes', commit: { sha: last } });
    expect((await stackSummary()).sync_requested_at).toBeNull();
    expect((await fetch(`${other.url}/healthz`)).status).toBe(200);
    const metrics = await (await fetch(`${other.url}/metrics`)).text();
    expect(metrics).toMatch(/^edgeplane_agent_last_success_timestamp_seconds\{stack="web"\} \d/m);
    expect(metrics).toMatch(/^edgeplane_agent_sync_duration_seconds_count\{outcome="applied"\} [1-9]/m);
    expect(metrics).toContain('edgeplane_agent_objects_drifted{stack="web"} 0');
    expect(await stop(other)).toBe(0);
    for (const x of agents) expect(x.out()).not.toMatch(/\bWarning\b/);
  });
});
