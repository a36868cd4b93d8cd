import { describe, expect, it } from 'vitest';
import { httpTransport } from '../../src/client/transport.js';
import { backoffMs, parseRetryAfter, withRetry, type HttpResponse, type RetryInfo } from '../../src/reconciler/apply/retry.js';

const res = (status: number, headers: Record<string, string> = {}, body: unknown = {}): HttpResponse => ({ status, headers, body });

function script(...outcomes: (HttpResponse | Error)[]) {
  let calls = 0;
  const send = async () => {
    const o = outcomes[Math.min(calls++, outcomes.length - 1)];
    if (o instanceof Error) throw o;
    return o;
  };
  return { send, calls: () => calls };
}

function fakeTime() {
  const slept: number[] = [];
  return { slept, sleep: async (ms: number) => { slept.push(ms); }, now: () => Date.parse('2026-11-22T10:00:00Z') };
}

describe('backoff', () => {
  it('doubles per retry, stays within [step/2, step], and is capped', () => {
    expect(backoffMs(1, { baseMs: 100, random: () => 0 })).toBe(50);
    expect(backoffMs(1, { baseMs: 100, random: () => 1 })).toBe(100);
    expect(backoffMs(4, { baseMs: 100, random: () => 1 })).toBe(800);
    expect(backoffMs(30, { baseMs: 100, capMs: 5000, random: () => 1 })).toBe(5000);
    expect(backoffMs(30, { baseMs: 100, capMs: 5000, random: () => 0 })).toBe(2500);
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-22T10:00:00Z');
  it('reads delta-seconds and HTTP dates', () => {
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe('withRetry', () => {
  it('returns a final response at once (2xx and 4xx alike)', async () => {
    for (const status of [200, 201, 204, 400, 404, 409]) {
      const s = script(res(status));
      const t = fakeTime();
      expect((await withRetry(s.send, { sleep: t.sleep })).status).toBe(status);
      expect(s.calls()).toBe(1);
      expect(t.slept).toEqual([]);
    }
  });

  it('honours Retry-After on 429, in seconds and as a date, capped', async () => {
    const t = fakeTime();
    const infos: RetryInfo[] = [];
    const s = script(res(429, { 'Retry-After': '2' }), res(429, { 'retry-after': 'Sun, 22 Nov 2026 10:00:05 GMT' }), res(429, { 'retry-after': '3600' }), res(200));
    const out = await withRetry(s.send, { ...t, maxRetryAfterMs: 30_000, onRetry: (i) => infos.push(i) });
    expect(out.status).toBe(200);
    expect(t.slept).toEqual([2000, 5000, 30_000]);
    expect(infos.map((i) => [i.attempt, i.reason])).toEqual([[2, 'HTTP 429'], [3, 'HTTP 429'], [4, 'HTTP 429']]);
  });

  it('retries 5xx and network errors with growing backoff, then gives up', async () => {
    const t = fakeTime();
    const s = script(res(503), new Error('ECONNRESET'), res(502), res(500));
    const out = await withRetry(s.send, { ...t, attempts: 4, baseMs: 100, random: () => 1 });
    expect(out.status).toBe(500);
    expect(s.calls()).toBe(4);
    expect(t.slept).toEqual([100, 200, 400]);
  });

  it('throws the last network error when attempts run out', async () => {
    const t = fakeTime();
    const s = script(new Error('ECONNREFUSED'));
    await expect(withRetry(s.send, { ...t, attempts: 3 })).rejects.toThrow('ECONNREFUSED');
    expect(s.calls()).toBe(3);
  });

  it('a request the transport refuses to send (a saved plan\'s path off the API) is not sent again', async () => {
    const t = fakeTime();
    const transport = httpTransport('http://127.0.0.1:9', 'key');
    let calls = 0;
    const send = (path: string) => () => { calls++; return transport.request('PATCH', path, {}); };
    await expect(withRetry(send('https://elsewhere.example/backends/failover/x'), { ...t, attempts: 6 })).rejects.toThrow(/refusing to send a request to https:\/\/elsewhere\.example/);
    await transport.close();
    await expect(withRetry(send('/backends/failover/x'), { ...t, attempts: 6 })).rejects.toThrow(/was closed/);
    expect(calls).toBe(2);
    expect(t.slept).toEqual([]);
  });

  it('a create with an unknown outcome is resolved before any retry: found ⇒ no second POST', async () => {
    const t = fakeTime();
    const s = script(new Error('socket hang up'), res(201, {}, { id: 'dup' }));
    let resolves = 0;
    const out = await withRetry(s.send, {
      ...t, create: true,
      resolveUnknown: async () => { resolves++; return res(201, {}, { id: 'bkdfo_found' }); },
    });
    expect(out.body).toEqual({ id: 'bkdfo_found' });
    expect(s.calls()).toBe(1);
    expect(resolves).toBe(1);
  });

  it('a create with an unknown outcome that did not happen is sent again', async () => {
    const t = fakeTime();
    const s = script(res(504), res(201, {}, { id: 'bkdfo_new' }));
    let resolves = 0;
    const out = await withRetry(s.send, { ...t, create: true, resolveUnknown: async () => { resolves++; return undefined; } });
    expect(out.body).toEqual({ id: 'bkdfo_new' });
    expect(s.calls()).toBe(2);
    expect(resolves).toBe(1);
  });

  it('a 429 on a create is not an unknown outcome: no resolve, just wait and retry', async () => {
    const t = fakeTime();
    const s = script(res(429, { 'retry-after': '1' }), res(201));
    let resolves = 0;
    await withRetry(s.send, { ...t, create: true, resolveUnknown: async () => { resolves++; return undefined; } });
    expect(resolves).toBe(0);
  });

  it('the last attempt of a create is resolved too, so a committed create is reported as done', async () => {
    const t = fakeTime();
    const s = script(res(500));
    const out = await withRetry(s.send, { ...t, attempts: 1, create: true, resolveUnknown: async () => res(201, {}, { id: 'x' }) });
    expect(out.status).toBe(201);
  });

  it('a create whose look-up fails too (the server still down) looks again, never POSTs blind, and POSTs once a look-up finds nothing', async () => {
    const t = fakeTime();
    const s = script(res(503, { 'retry-after': '1' }), res(201, {}, { id: 'bkdfo_new' }));
    const lookups: ('fail' | 'none')[] = ['fail', 'fail', 'none'];
    let resolves = 0;
    const retries: RetryInfo[] = [];
    const out = await withRetry(s.send, {
      ...t, create: true, onRetry: (r) => retries.push(r),
      resolveUnknown: async () => {
        if (lookups[resolves++] === 'fail') throw new Error('connect ECONNREFUSED');
        return undefined;
      },
    });
    expect(out.body).toEqual({ id: 'bkdfo_new' });
    expect(s.calls()).toBe(2); // the first POST, and one more after a look-up found nothing
    expect(resolves).toBe(3);
    expect(t.slept[0]).toBe(1000); // the 503's Retry-After
    expect(retries[0].reason).toMatch(/^outcome unknown \(HTTP 503\); looking for the object failed \(connect ECONNREFUSED\): looking again before any new POST/);
  });

  it('a create whose look-up fails until attempts run out fails saying the outcome is unknown, with one POST sent', async () => {
    const t = fakeTime();
    const s = script(new Error('socket hang up'));
    await expect(withRetry(s.send, { ...t, attempts: 4, create: true, resolveUnknown: async () => { throw new Error('HTTP 503'); } }))
      .rejects.toThrow(/^the create's outcome is unknown \(network error: socket hang up\) and looking for the object failed: HTTP 503/);
    expect(s.calls()).toBe(1);
  });

  it('a create found on a later look-up is done, with no second POST', async () => {
    const t = fakeTime();
    const s = script(res(502));
    let resolves = 0;
    const out = await withRetry(s.send, { ...t, create: true, resolveUnknown: async () => { if (resolves++ === 0) throw new Error('down'); return res(201, {}, { id: 'bkdfo_committed' }); } });
    expect(out.body).toEqual({ id: 'bkdfo_committed' });
    expect(s.calls()).toBe(1);
  });

  it('stops waiting when aborted', async () => {
    const ac = new AbortController();
    const s = script(res(503));
    const p = withRetry(s.send, { signal: ac.signal, baseMs: 10_000, random: () => 1 });
    setTimeout(() => ac.abort(new Error('stopped')), 10);
    await expect(p).rejects.toThrow('stopped');
  });
});
