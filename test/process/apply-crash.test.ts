import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport } from '../../src/client/transport.js';
import { runCli, startCli, startServe, type Served } from '../helpers/cli.js';
import { startCrashProxy, type Answered, type CrashProxy } from '../helpers/crash-proxy.js';
import { cleanupDirs, duplicates, liveObjects, manifestDir, remaining, tempDir } from '../helpers/reconcile.js';
import { ownSchema } from '../helpers/service.js';

/**
 * Crash recovery: the CLI is killed (SIGKILL) at a random point of an apply of 50 objects; the
 * next apply must converge with no duplicate and no orphaned (unmarked) object. Trials:
 * EDGEPLANE_CRASH_TRIALS (default 3; the issue's acceptance run uses 20), seed EDGEPLANE_CRASH_SEED.
 * A killed apply leaves its stack lock behind: it expires after EDGEPLANE_LOCK_TTL (3 s here),
 * and the next apply waits for that. The service too is killed while creates are in flight; and,
 * on PostgreSQL (DATABASE_URL), the replica that committed a create is killed before its answer is
 * out (EDGEPLANE_CRASH_COMMIT_TRIALS, default 2).
 */
const TRIALS = Number(process.env.EDGEPLANE_CRASH_TRIALS ?? 3);
const SEED = Number(process.env.EDGEPLANE_CRASH_SEED ?? Date.now() % 1_000_000);
/** Trials that kill the service (each restarts it): EDGEPLANE_CRASH_SERVICE_TRIALS, default 1. */
const SERVICE_TRIALS = Number(process.env.EDGEPLANE_CRASH_SERVICE_TRIALS ?? 1);

function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 10 failover backends (a chain of references) and 5 edges × 8 routes: 55 objects, ~100 steps. */
function manifests(tag: string): string {
  const docs: string[] = [];
  for (let i = 0; i < 10; i++) docs.push(`kind: FailoverBackend\nname: pool-${i}\nbackends: [${i ? `pool-${i - 1}` : 'bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs'}]\n`);
  for (let e = 0; e < 5; e++) {
    const routes = Array.from({ length: 8 }, (_, r) => `  - name: r${r}\n    match_type: path_prefix\n    match: /r${r}/\n    backend: { backend_id: pool-${(e + r) % 10} }\n${r % 3 === 0 ? '    ip_restriction: { ip_policy_ids: [ipp_2ZyQ0mX7vPr1TfAg5BlC9yNzMqG] }\n' : ''}${r % 2 ? '    compression: {}\n' : ''}`);
    docs.push(`kind: HTTPSEdge\nname: edge-${e}\nhostports: ["e${e}.${tag}.example.com:443"]\nroutes:\n${routes.join('')}`);
  }
  return docs.join('---\n');
}
const OBJECTS = 10 + 5 + 5 * 8;

/** A port nothing listens on now: the service is started on it again after it is killed. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

let served: Served;
let key: string;
const state = tempDir('ep-crash-');

beforeAll(async () => {
  const created = await runCli(['admin', 'accounts', 'create', '--name', 'crash', '--json', '--state', state]);
  expect(created.code, created.stderr).toBe(0);
  key = JSON.parse(created.stdout).api_key;
  served = await startServe(['--state', state]);
}, 180_000);
afterAll(async () => {
  await served?.stop();
  cleanupDirs();
});

/**
 * The killed applies' locks expire soon: the next apply waits for that, not a minute. (Only theirs:
 * on a loaded machine a renewal may come later than a second, and a lock that short is lost.)
 */
const SHORT_LOCK = { EDGEPLANE_LOCK_TTL: '3s' };

/** Runs `apply` and SIGKILLs it once it has printed `killAfter` JSON events (or lets it finish). */
async function killedApply(args: string[], env: Record<string, string>, killAfter: number, delayMs: number): Promise<{ killed: boolean; events: number }> {
  const p = startCli(['apply', ...args, '--auto-approve', '--json'], { env: { ...env, ...SHORT_LOCK } });
  let killed = false;
  try {
    await p.waitFor(new RegExp(`^(?:.*\\n){${killAfter + 1}}`), { timeoutMs: 120_000 }); // the plan line + killAfter events
    await new Promise((r) => setTimeout(r, delayMs));
    killed = p.child.kill('SIGKILL');
  } catch {
    // Finished (or failed) before the kill point: the trial still checks convergence.
  }
  await p.exited;
  return { killed, events: p.out().split('\n').filter((l) => l.startsWith('{"ts"')).length };
}

/** The next apply succeeds and leaves nothing to do (checked in-process when the API is reachable: one process less per trial). */
async function converges(dir: string, stack: string, env: Record<string, string>, target: string[], client?: ApiClient): Promise<void> {
  const again = await runCli(['apply', dir, '--stack', stack, ...target, '--auto-approve'], { env });
  expect(again.code, again.stdout + again.stderr).toBe(0);
  if (client) {
    expect(await remaining(client, dir, stack)).toEqual([]);
    return;
  }
  const plan = await runCli(['plan', dir, '--stack', stack, ...target, '--detailed-exitcode'], { env });
  expect(plan.code, plan.stdout + plan.stderr).toBe(0);
}

describe(`apply killed at random points (${TRIALS} trials, seed ${SEED})`, { timeout: 600_000 }, () => {
  it('the next apply converges: no duplicates, no orphaned unmanaged objects', async () => {
    const random = rng(SEED);
    const env = { EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: key };
    const client = new ApiClient(httpTransport(served.url, key));
    // Each trial's kill point, parallelism and delay, drawn in trial order from the seed; the trials
    // then run three at a time, each on a stack (and hostports) of its own: most of a trial is the
    // wait for its killed apply's lock to expire. Checked once all have converged.
    const trials = Array.from({ length: TRIALS }, (_, t) => ({
      stack: `crash-${t}`,
      dir: manifestDir({ 'all.yaml': manifests(`t${t}s${SEED}`) }),
      killAfter: Math.floor(random() * 2 * OBJECTS),
      parallelism: 1 + Math.floor(random() * 8),
      delayMs: Math.floor(random() * 20),
    }));
    const outcomes: string[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: Math.min(3, TRIALS) }, async () => {
      for (let t = next++; t < TRIALS; t = next++) {
        const { stack, dir, killAfter, parallelism, delayMs } = trials[t];
        const r = await killedApply([dir, '--stack', stack, '--parallelism', String(parallelism)], env, killAfter, delayMs);
        await converges(dir, stack, env, [], client);
        outcomes[t] = `${killAfter}:${r.killed ? 'killed' : 'finished'}`;
      }
    }));
    const live = await liveObjects(client);
    expect(live.filter((o) => o.identity === 'unmanaged'), `trials ${outcomes.join(', ')}`).toEqual([]);
    trials.forEach(({ stack, killAfter }, t) => {
      const own = live.filter((o) => o.identity.startsWith(`${stack}:`));
      expect(duplicates(own), `trial ${t} (kill after ${killAfter} events)`).toEqual([]);
      expect(own, `trial ${t}`).toHaveLength(OBJECTS);
    });
    expect(outcomes.some((o) => o.endsWith('killed'))).toBe(true);
  });

  it('also with the embedded engine in the killed process (its lock and PGlite files recover)', async () => {
    const own = tempDir('ep-crash-embedded-');
    const dir = manifestDir({ 'all.yaml': manifests(`emb${SEED}`) });
    const random = rng(SEED + 1);
    const r = await killedApply([dir, '--state', own], {}, 5 + Math.floor(random() * OBJECTS), 0);
    expect(r.killed).toBe(true);
    await converges(dir, 'default', {}, ['--state', own]);
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) it(`${signal === 'SIGINT' ? 'Ctrl-C' : 'SIGTERM (a cancelled CI job)'} stops starting steps, lets running ones finish, reports, exits 1; the next apply converges`, async () => {
    const env = { EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: key };
    const dir = manifestDir({ 'all.yaml': manifests(`int${signal}${SEED}`) });
    const stack = `interrupted-${signal.toLowerCase()}`;
    const p = startCli(['apply', dir, '--stack', stack, '--auto-approve', '--parallelism', '2'], { env });
    await p.waitFor(/\[ ?10\/\d+\] done/, { timeoutMs: 120_000 });
    p.child.kill(signal);
    expect(await p.exited).toBe(1);
    expect(p.out()).toContain(`interrupted (${signal}): finishing the steps in flight`);
    expect(p.out()).toMatch(/Apply: \d+ done, 0 failed, \d+ skipped/);
    expect(p.out()).toMatch(/\nskipped \d+ steps? not started \(aborted: the apply was stopped\)\n/);
    expect(p.out()).not.toMatch(/\] skipped .* \(aborted/); // one line for them all, not one per step
    expect(p.out()).toContain('apply did not finish: it was interrupted; run apply again to finish (it resumes from the live state)');
    const client = new ApiClient(httpTransport(served.url, key));
    expect(await client.listLocks()).toEqual([]); // released on the way out: the next apply does not wait
    await converges(dir, stack, env, [], client);
  });

  it('the service killed while creates are in flight (some committed, their answers lost): the apply resends them with their keys; no duplicate', async () => {
    const own = tempDir('ep-crash-service-');
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'crash-service', '--json', '--state', own]);
    expect(created.code, created.stderr).toBe(0);
    const ownKey = JSON.parse(created.stdout).api_key as string;
    const port = await freePort();
    let service = await startServe(['--state', own, '--port', String(port)]);
    try {
      const env = { EDGEPLANE_API_URL: service.url, EDGEPLANE_API_KEY: ownKey };
      const client = new ApiClient(httpTransport(service.url, ownKey));
      const random = rng(SEED + 2);
      for (let t = 0; t < SERVICE_TRIALS; t++) {
        const dir = manifestDir({ 'all.yaml': manifests(`svc${t}s${SEED}`) });
        const stack = `service-killed-${t}`;
        const p = startCli(['apply', dir, '--stack', stack, '--auto-approve', '--json', '--parallelism', '8'], { env });
        await p.waitFor(new RegExp(`^(?:.*\\n){${2 + Math.floor(random() * 20)}}`), { timeoutMs: 120_000 }).catch(() => {});
        await service.stop('SIGKILL');
        service = await startServe(['--state', own, '--port', String(port)]);
        const code = await p.exited; // 0 when its retries outlasted the restart, 1 when they ran out
        expect([0, 1], p.out()).toContain(code);
        await converges(dir, stack, env, [], client);
        const live = (await liveObjects(client)).filter((o) => o.identity === 'unmanaged' || o.identity.startsWith(`${stack}:`));
        expect(duplicates(live), p.out()).toEqual([]);
        expect(live.filter((o) => o.identity === 'unmanaged')).toEqual([]);
        expect(live).toHaveLength(OBJECTS);
      }
      await client.close();
    } finally {
      await service.stop();
    }
  });
});

/** Trials of the kill between a create's commit and its answer: EDGEPLANE_CRASH_COMMIT_TRIALS, default 2. */
const COMMIT_TRIALS = Number(process.env.EDGEPLANE_CRASH_COMMIT_TRIALS ?? 2);

/** A create's answer: a POST that made an object (201), not a stack lock's. */
const isCreate = (a: Answered) => a.method === 'POST' && a.status === 201 && !a.path.startsWith('/stack_locks') && !a.path.startsWith('/sync_runs');

/**
 * Two `serve` replicas of one PostgreSQL behind a proxy (test/helpers/crash-proxy.ts). When the
 * proxy has the answer of the apply's Nth create — committed, then — it kills (SIGKILL) the replica
 * that made it, or the apply itself, and drops the answer: the client's connection is cut.
 */
describe.skipIf(!process.env.DATABASE_URL)(`killed between a create's commit and its answer (${COMMIT_TRIALS} trials, seed ${SEED})`, { timeout: 600_000 }, () => {
  let schema: Awaited<ReturnType<typeof ownSchema>>;
  let dbEnv: Record<string, string>;
  let replicas: Served[] = [];
  let proxy: CrashProxy;
  let apiKey: string;
  /** What the proxy does with the next create answers (it passes everything by default). */
  let onCreate: (a: Answered, n: number) => 'pass' | 'drop' = () => 'pass';
  let creates = 0;
  beforeAll(async () => {
    schema = await ownSchema('ep_crash_commit_');
    dbEnv = { DATABASE_URL: schema.url.toString() };
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'crash-commit', '--json'], { env: dbEnv });
    expect(created.code, created.stderr).toBe(0);
    apiKey = JSON.parse(created.stdout).api_key;
    replicas = await Promise.all([startServe([], { env: dbEnv }), startServe([], { env: dbEnv })]);
    proxy = await startCrashProxy(replicas.map((r) => r.url), (a) => (isCreate(a) ? onCreate(a, ++creates) : 'pass'));
  }, 180_000);
  afterAll(async () => {
    await proxy?.close();
    await Promise.all(replicas.map((r) => r.stop()));
    await schema?.drop();
  });

  /** The stack's live objects: exactly the manifests', none twice, none unmarked; and the next plan is empty. */
  async function convergedExactly(dir: string, stack: string, said: string): Promise<void> {
    const client = new ApiClient(httpTransport(proxy.url, apiKey));
    try {
      const live = (await liveObjects(client)).filter((o) => o.identity === 'unmanaged' || o.identity.startsWith(`${stack}:`));
      expect(duplicates(live), said).toEqual([]);
      expect(live.filter((o) => o.identity === 'unmanaged'), said).toEqual([]);
      expect(live, said).toHaveLength(OBJECTS);
      expect(await remaining(client, dir, stack)).toEqual([]);
    } finally {
      await client.close();
    }
  }

  it('the replica is killed: the apply sends the create again with its key, the other replica answers with the kept response; exit 0 in the same run, no duplicate', async () => {
    const random = rng(SEED + 3);
    for (let t = 0; t < COMMIT_TRIALS; t++) {
      const stack = `commit-killed-${t}`;
      const dir = manifestDir({ 'all.yaml': manifests(`cm${t}s${SEED}`) });
      const nth = 1 + Math.floor(random() * OBJECTS);
      let dropped: Answered | undefined;
      creates = 0;
      onCreate = (a, n) => {
        if (n !== nth) return 'pass';
        dropped = a;
        const victim = replicas.find((r) => r.url === a.backend.url)!;
        victim.child.kill('SIGKILL');
        a.backend.alive = false;
        return 'drop';
      };
      const run = await runCli(['apply', dir, '--stack', stack, '--auto-approve', '--parallelism', String(1 + Math.floor(random() * 8))], {
        env: { EDGEPLANE_API_URL: proxy.url, EDGEPLANE_API_KEY: apiKey },
      });
      onCreate = () => 'pass';
      const said = `trial ${t}, create ${nth}:\n${run.stdout}${run.stderr}`;
      expect(run.code, said).toBe(0);
      expect(dropped, said).toBeDefined();
      // The same request with the same key, answered by the other replica from the kept response:
      // the object the dead replica made, not a second one.
      const again = proxy.answered.filter((a) => a.key === dropped!.key && a !== dropped);
      expect(again.map((a) => [a.method, a.path, a.status, a.headers['idempotent-replayed']]), said).toEqual([[dropped!.method, dropped!.path, 201, 'true']]);
      expect(again[0].backend, said).not.toBe(dropped!.backend);
      expect(JSON.parse(again[0].body).id).toBe(JSON.parse(dropped!.body).id);
      await convergedExactly(dir, stack, said);
      // The killed replica comes back (a new process) for the next trial.
      const back = await startServe([], { env: dbEnv });
      replicas = replicas.map((r) => (r.url === dropped!.backend.url ? back : r));
      dropped!.backend.url = back.url;
      dropped!.backend.alive = true;
    }
  });

  it('the apply itself is killed right after a create committed: the next apply (keys of its own) finds the object by its ownership marker; no duplicate', async () => {
    const random = rng(SEED + 4);
    const stack = 'commit-apply-killed';
    const dir = manifestDir({ 'all.yaml': manifests(`ca${SEED}`) });
    const nth = 1 + Math.floor(random() * OBJECTS);
    const env = { EDGEPLANE_API_URL: proxy.url, EDGEPLANE_API_KEY: apiKey };
    const p = startCli(['apply', dir, '--stack', stack, '--auto-approve', '--parallelism', '4'], { env: { ...env, ...SHORT_LOCK } });
    let dropped: Answered | undefined;
    creates = 0;
    onCreate = (a, n) => {
      if (n !== nth) return 'pass';
      dropped = a;
      p.child.kill('SIGKILL');
      return 'drop';
    };
    await p.exited;
    onCreate = () => 'pass';
    expect(dropped, p.out()).toBeDefined();
    const made = JSON.parse(dropped!.body).id as string;
    const again = await runCli(['apply', dir, '--stack', stack, '--auto-approve'], { env });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    // No request of the second run repeats the dropped one's key: it found the object by its marker.
    expect(proxy.answered.filter((a) => a.key === dropped!.key)).toEqual([dropped]);
    await convergedExactly(dir, stack, p.out() + again.stdout);
    const client = new ApiClient(httpTransport(proxy.url, apiKey));
    expect((await liveObjects(client)).map((o) => o.id)).toContain(made);
    await client.close();
  });
});
