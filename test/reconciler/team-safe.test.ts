import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiClient, type StackLockHeld } from '../../src/client/api-client.js';
import { httpTransport, type RawResponse, type Transport } from '../../src/client/transport.js';
import { applyPlan, StaleObjectError } from '../../src/reconciler/apply/execute.js';
import { secretsFromMap } from '../../src/reconciler/apply/materialize.js';
import { getEventListeners } from 'node:events';
import { acquireStackLock, beatMs, StackLockAborted, StackLockTimeout } from '../../src/reconciler/lock/stack-lock.js';
import { applyDir, cleanupDirs, liveObjects, manifestDir, prepare, remaining } from '../helpers/reconcile.js';
import { ENGINES, startTestService, type TestService } from '../helpers/service.js';

const EDGE = (tag: string) => `kind: FailoverBackend\nname: pool\ndescription: v1\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n---\nkind: HTTPSEdge\nname: web\ndescription: v1\nhostports: ["${tag}.example.com:443"]\nroutes:\n  - name: site\n    match_type: path_prefix\n    match: /\n    backend: { backend_id: pool }\n    compression: {}\n`;

describe.each(ENGINES)('team-safe apply (%s)', (engine) => {
  let svc: TestService;
  beforeAll(async () => { svc = await startTestService(engine); });
  afterAll(async () => { await svc?.close(); cleanupDirs(); });

  const clientOf = async (wrap: (t: Transport) => Transport = (t) => t) => {
    const account = await svc.account();
    return { account, client: new ApiClient(wrap(httpTransport(svc.url, account.apiKey!))) };
  };

  it('an object changed by someone else between plan and apply is not overwritten: its branch stops and is reported', async () => {
    const { account, client } = await clientOf();
    const dir = manifestDir({ 'all.yaml': EDGE(`stale${engine}${Date.now()}`) });
    await applyDir(client, dir, 'stale');
    writeFileSync(join(dir, 'all.yaml'), readFileSync(join(dir, 'all.yaml'), 'utf8').replaceAll('description: v1', 'description: v2'));
    const p = await prepare(client, dir, 'stale');
    const pool = p.plan!.steps.find((s) => s.object.identity === 'FailoverBackend/pool')!;
    expect(p.plan!.versions?.[pool.object.id!]).toMatch(/^"\d+"$/);
    // Someone edits the backend by hand after the plan read it.
    const hand = await account.patch(`/backends/failover/${pool.object.id}`, { description: 'by hand' });
    expect(hand.status).toBe(200);
    const r = await applyPlan(p.plan!, { client, secrets: secretsFromMap(p.secrets) });
    expect(r.stale).toEqual([{ step: pool.id, identity: 'FailoverBackend/pool', id: pool.object.id }]);
    expect(r.failed.map((f) => f.id)).toEqual([pool.id]);
    expect(r.failed[0].error).toBe(new StaleObjectError(pool).message);
    expect(r.done).toContain('HTTPSEdge/web:update'); // the other branch went on
    expect((await account.get(`/backends/failover/${pool.object.id}`)).body.description).toBe('by hand');
    // A new plan takes the change into account and converges.
    await applyDir(client, dir, 'stale');
    expect(await remaining(client, dir, 'stale')).toEqual([]);
  });

  it('several steps of one object name the version the previous one left; an edge whose routes change goes unconditioned', async () => {
    const { client } = await clientOf();
    const dir = manifestDir({ 'all.yaml': EDGE(`chain${engine}${Date.now()}`) });
    await applyDir(client, dir, 'chain');
    writeFileSync(join(dir, 'all.yaml'), readFileSync(join(dir, 'all.yaml'), 'utf8')
      .replace('description: v1\nhostports', 'description: v2\ntls_termination: { min_version: "1.2" }\nhostports')
      .replace('    compression: {}\n', '    description: changed\n'));
    const p = await prepare(client, dir, 'chain');
    const edgeSteps = p.plan!.steps.filter((s) => s.object.identity === 'HTTPSEdge/web');
    const routeSteps = p.plan!.steps.filter((s) => s.object.identity === 'HTTPSEdge/web/routes/site');
    expect(routeSteps.length).toBeGreaterThan(1);
    expect(edgeSteps.length).toBeGreaterThan(0);
    expect(p.plan!.versions?.[routeSteps[0].object.id!]).toBeDefined();
    expect(p.plan!.versions?.[edgeSteps[0].object.id!]).toBeUndefined();
    const r = await applyPlan(p.plan!, { client, secrets: secretsFromMap(p.secrets), parallelism: 8 });
    expect(r.failed).toEqual([]);
    expect(await remaining(client, dir, 'chain')).toEqual([]);
  });

  it('a create whose response is lost is sent again with its key and answered with the first response: no duplicate', async () => {
    let lost = 0;
    const keys: string[] = [];
    const { client } = await clientOf((t) => ({
      target: t.target,
      close: () => t.close(),
      async request(method, path, body, headers) {
        const res = await t.request(method, path, body, headers);
        if (method === 'POST') keys.push(headers?.['idempotency-key'] ?? '');
        if (method === 'POST' && res.status === 201 && lost++ % 2 === 0) throw new Error('socket hang up'); // every other create's answer is lost
        return res;
      },
    }));
    const dir = manifestDir({ 'all.yaml': EDGE(`lost${engine}${Date.now()}`) });
    const p = await prepare(client, dir, 'lost');
    const r = await applyPlan(p.plan!, { client, secrets: secretsFromMap(p.secrets), retry: { sleep: async () => {}, random: () => 0.5 } });
    expect(r.failed).toEqual([]);
    expect(keys.every((k) => /^edgeplane-[\w-]{43}$/.test(k))).toBe(true);
    expect(keys.length).toBeGreaterThan(new Set(keys).size); // resent with the same key
    const live = (await liveObjects(client)).filter((o) => o.identity.startsWith('lost:'));
    expect(live).toHaveLength(3);
    expect(await remaining(client, dir, 'lost')).toEqual([]);
  });

  it('stack lock: a second taker waits, polling, and gives up naming the holder; an expired lock frees the stack', async () => {
    const { account, client } = await clientOf();
    const first = await acquireStackLock(client, { stack: 's', holder: 'ann@laptop, pid 1, apply', releaseHint: 'edgeplane lock release --stack s --force' });
    let t = 0;
    const waits: number[] = [];
    let told: StackLockHeld | undefined;
    const asked: string[] = [];
    const second = acquireStackLock(client, {
      stack: 's', holder: 'bob@ci', timeoutMs: 10_000, releaseHint: 'edgeplane lock release --stack s --force',
      now: () => t, sleep: async (ms) => { waits.push(ms); t += ms; }, onWait: (h) => (told = h),
      reclaim: async (h) => { asked.push(h.holder); return false; },
    });
    await expect(second).rejects.toThrow(StackLockTimeout);
    expect(asked).toEqual(['ann@laptop, pid 1, apply']); // once for the lock, not at every poll
    await expect(second).rejects.toThrow(/locked by ann@laptop, pid 1, apply since .*Z.*edgeplane lock release --stack s --force/);
    expect(told?.holder).toBe('ann@laptop, pid 1, apply');
    expect(waits[0]).toBe(250);
    expect(Math.max(...waits)).toBe(2000);
    expect(waits.reduce((a, b) => a + b)).toBe(10_000);
    await svc.db.query("UPDATE stack_locks SET expires_at = now() - interval '1 second' WHERE account_id = $1", [account.accountId]);
    const third = await acquireStackLock(client, { stack: 's', holder: 'bob@ci', timeoutMs: 0, releaseHint: '' });
    expect(third.lock.holder).toBe('bob@ci');
    await third.release();
    await first.release(); // expired and gone: nothing to release, no error
    expect(await client.listLocks()).toEqual([]);
  });

  it('stack lock: Ctrl-C while taking it releases what the request in flight got, and ends a wait at once', async () => {
    const ac = new AbortController();
    const released: string[] = [];
    const lock = { id: 'stklk_1', stack: 's', holder: 'me', created_at: 'x', expires_at: 'y' };
    const stub = {
      takeLock: async () => { ac.abort('SIGINT'); return { lock }; }, // the signal came while the request was out
      releaseLock: async (id: string) => { released.push(id); return true; },
      renewLock: async () => true,
    } as unknown as ApiClient;
    await expect(acquireStackLock(stub, { stack: 's', holder: 'me', releaseHint: '', signal: ac.signal })).rejects.toThrow(StackLockAborted);
    expect(released).toEqual(['stklk_1']);

    const waiting = new AbortController();
    const held = { held: { holder: 'other', created_at: 'x', expires_at: 'y' } };
    const busy = { takeLock: async () => held } as unknown as ApiClient;
    const taking = acquireStackLock(busy, { stack: 's', holder: 'me', releaseHint: '', timeoutMs: 60_000, signal: waiting.signal, sleep: () => new Promise(() => {}) });
    setTimeout(() => waiting.abort('SIGINT'), 10);
    await expect(taking).rejects.toThrow('stopped while taking the lock on stack "s"; nothing is held');
  });

  it('stack lock: a holder that stalled past its TTL knows by its own clock, and its apply starts no further step', async () => {
    const { client } = await clientOf();
    let t = 1_000_000;
    const lost: string[] = [];
    const held = await acquireStackLock(client, { stack: 'stall', holder: 'me', ttlSeconds: 30, releaseHint: '', now: () => t, onLost: (w) => lost.push(w) });
    t += 20_000;
    expect(held.valid()).toBe(true);
    // The laptop slept (no renewal ran): 26 s after the take, inside the margin before the TTL's end.
    t += 6_000;
    expect(held.valid()).toBe(false);
    expect(held.signal.aborted).toBe(true);
    expect(lost).toEqual(['the lock on stack "stall" ran out before it could be renewed (this process stalled for 26 s): stopping']);

    // An apply asked with that lock: the steps already running finish, none starts after.
    const dir = manifestDir({ 'all.yaml': Array.from({ length: 6 }, (_, i) => `kind: FailoverBackend\nname: f${i}\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n`).join('---\n') });
    const p = await prepare(client, dir, 'stall');
    let starts = 0;
    const r = await applyPlan(p.plan!, { client, secrets: secretsFromMap(p.secrets), parallelism: 1, onEvent: (e) => { if (e.type === 'start') starts++; }, mayStart: () => starts < 2 });
    expect(starts).toBe(2);
    expect(r.done).toHaveLength(2);
    expect(r.skipped.map((x) => x.because)).toEqual(Array(4).fill('aborted'));
    expect(await remaining(client, dir, 'stall')).toHaveLength(4);
    await held.release();
  });

  it('stack lock: a long wait leaves no abort listener behind on the caller\'s signal; confirm() tells a lock released by force', async () => {
    const { client } = await clientOf();
    const other = await acquireStackLock(client, { stack: 'wait', holder: 'other', ttlSeconds: 600, releaseHint: '' });
    const ac = new AbortController();
    let polls = 0;
    const waiting = acquireStackLock(client, {
      stack: 'wait', holder: 'me', timeoutMs: 60_000, pollMs: 1, signal: ac.signal, releaseHint: '',
      sleep: async () => {
        polls++;
        expect(getEventListeners(ac.signal, 'abort').length).toBeLessThanOrEqual(1);
        if (polls === 30) await other.release();
      },
    });
    const held = await waiting;
    expect(polls).toBeGreaterThanOrEqual(30); // more polls than Node's 10-listener warning
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    expect(await held.confirm()).toBe(true);
    expect(await client.releaseLock(held.lock.id)).toBe(true); // lock release --force
    expect(await held.confirm()).toBe(false);
    expect(held.signal.aborted).toBe(true);
    await held.release();
  });

  it('stack lock: the beat is a third of the TTL, at most 2 s: a lock released by force is noticed within seconds', () => {
    expect(beatMs(15)).toBe(2000);
    expect(beatMs(3)).toBe(1000);
    expect(beatMs(1)).toBe(500);
    expect(beatMs(3600)).toBe(2000);
  });

  it('stack lock: renewed every beat (beatMs) while held; a lock released by force aborts the holder\'s signal', async () => {
    const { client } = await clientOf();
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const held = await acquireStackLock(client, { stack: 'beat', holder: 'me', ttlSeconds: 30, releaseHint: '' });
      const before = held.lock.expires_at;
      await new Promise((r) => setTimeout(r, 1100)); // the server's clock moves on a second
      await vi.advanceTimersByTimeAsync(10_000);
      await vi.waitFor(async () => expect((await client.listLocks())[0].expires_at > before).toBe(true));
      expect(held.signal.aborted).toBe(false);
      expect(await client.releaseLock(held.lock.id)).toBe(true); // lock release --force
      await vi.advanceTimersByTimeAsync(10_000);
      await vi.waitFor(() => expect(held.signal.aborted).toBe(true));
      await held.release();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('the client honours Retry-After on 429 and 503, for requests safe to send again', () => {
  const scripted = (answers: RawResponse[], seen: string[]): Transport => ({
    target: 'test',
    close: async () => {},
    async request(method, path, _body, headers) {
      seen.push(`${method} ${path} ${headers?.['idempotency-key'] ?? ''}`.trim());
      return answers.shift() ?? { status: 200, headers: {}, body: { ok: true } };
    },
  });

  it('waits what Retry-After says (seconds or a date), bounded, then sends again', async () => {
    const seen: string[] = [];
    const slept: number[] = [];
    const client = new ApiClient(scripted([
      { status: 429, headers: { 'retry-after': '7' }, body: {} },
      { status: 503, headers: { 'retry-after': '600' }, body: {} },
    ], seen), { sleep: async (ms) => { slept.push(ms); } });
    expect(await client.send('GET', '/x')).toEqual({ ok: true });
    expect(slept).toEqual([7000, 60_000]);
    expect(seen).toHaveLength(3);
  });

  it('a POST is sent again only with an Idempotency-Key; attempts are bounded', async () => {
    const seen: string[] = [];
    const slept: number[] = [];
    const busy = () => ({ status: 429, headers: { 'retry-after': '1' }, body: { error_code: 'ERR_RATE_LIMITED' } });
    const client = new ApiClient(scripted([busy(), busy(), busy(), busy(), busy(), busy()], seen), { sleep: async (ms) => { slept.push(ms); } });
    await expect(client.send('POST', '/x', {})).rejects.toThrow(/429/);
    expect(seen).toEqual(['POST /x']);
    await expect(client.send('POST', '/x', {}, { 'idempotency-key': 'k' })).rejects.toThrow(/429/);
    expect(seen.slice(1)).toEqual(['POST /x k', 'POST /x k', 'POST /x k', 'POST /x k']);
    expect(slept).toEqual([1000, 1000, 1000]);
  });
});
