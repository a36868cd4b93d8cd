import { describe, expect, it } from 'vitest';
import { retryableFailure, withConnectionRetry } from '../../src/client/connection-retry.js';

const err = (code: string, message = code) => Object.assign(new Error(message), { code });
const KEY = { 'idempotency-key': 'k1' };

describe('retryableFailure: which failed requests are sent again', () => {
  it('a lost connection, for an idempotent method or a request with an Idempotency-Key', () => {
    for (const code of ['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']) {
      for (const method of ['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'get']) expect(retryableFailure(err(code), { method }), `${method} ${code}`).toBe(true);
      expect(retryableFailure(err(code), { method: 'POST', headers: KEY })).toBe(true);
      expect(retryableFailure(err(code), { method: 'PATCH', headers: { 'Idempotency-Key': 'k' } })).toBe(true);
    }
    // node:http's "socket hang up" is an ECONNRESET.
    expect(retryableFailure(err('ECONNRESET', 'socket hang up'), { method: 'POST', headers: KEY })).toBe(true);
  });

  it('never a POST without a key (it may have been done), nor a PATCH with only If-Match', () => {
    expect(retryableFailure(err('ECONNRESET'), { method: 'POST' })).toBe(false);
    expect(retryableFailure(err('ECONNRESET'), { method: 'POST', headers: { 'content-type': 'application/json' } })).toBe(false);
    expect(retryableFailure(err('ECONNRESET'), { method: 'PATCH', headers: { 'if-match': '"3"' } })).toBe(false);
  });

  it('a refused connection only after one was lost (a replica gone, the service restarting), not a wrong URL', () => {
    expect(retryableFailure(err('ECONNREFUSED'), { method: 'GET' })).toBe(false);
    expect(retryableFailure(err('ECONNREFUSED'), { method: 'GET', connectionLost: true })).toBe(true);
    expect(retryableFailure(err('ECONNREFUSED'), { method: 'POST', connectionLost: true })).toBe(false);
  });

  it('not a timeout, an HTTP answer, a DNS failure or an error without a code', () => {
    for (const e of [err('EP_TIMEOUT'), err('ENOTFOUND'), err('EPROTO'), err('ETIMEDOUT'), new Error('ECONNRESET'), 'ECONNRESET', undefined, null]) {
      expect(retryableFailure(e, { method: 'GET', connectionLost: true }), String(e)).toBe(false);
    }
  });

  it('reads the code of a cause too (undici: "fetch failed" caused by a socket error)', () => {
    const fetchFailed = Object.assign(new TypeError('fetch failed'), { cause: err('UND_ERR_SOCKET', 'other side closed') });
    expect(retryableFailure(fetchFailed, { method: 'DELETE' })).toBe(true);
    expect(retryableFailure(fetchFailed, { method: 'POST' })).toBe(false);
  });
});

describe('withConnectionRetry', () => {
  /** A clock that moves only when slept on, and the waits slept. */
  function clock() {
    let t = 1_000;
    const waits: number[] = [];
    return { now: () => t, sleep: async (ms: number) => { waits.push(ms); t += ms; }, waits, advance: (ms: number) => { t += ms; } };
  }

  it('sends a keyed POST again after a lost connection, and again after a refused one, with short growing waits', async () => {
    const c = clock();
    const failures = [err('ECONNRESET', 'socket hang up'), err('ECONNREFUSED')];
    const sent: number[] = [];
    const res = await withConnectionRetry(async (left) => {
      sent.push(left);
      const f = failures.shift();
      if (f) throw f;
      return 'answer';
    }, { method: 'POST', headers: KEY }, { timeoutMs: 30_000, now: c.now, sleep: c.sleep, random: () => 1 });
    expect(res).toBe('answer');
    expect(c.waits).toEqual([100, 200]);
    // Each try gets what is left of the one deadline.
    expect(sent).toEqual([30_000, 29_900, 29_700]);
  });

  it('stops after `tries` and throws the last failure', async () => {
    const c = clock();
    let n = 0;
    const p = withConnectionRetry(async () => { n++; throw err('ECONNRESET', `reset ${n}`); }, { method: 'GET' }, { timeoutMs: 30_000, now: c.now, sleep: c.sleep, random: () => 0 });
    await expect(p).rejects.toThrow('reset 3');
    expect(n).toBe(3);
    expect(c.waits).toEqual([50, 100]);
  });

  it('throws at once what is not retryable: an unkeyed POST, a first refused connection, a timeout', async () => {
    for (const [request, failure] of [[{ method: 'POST' }, err('ECONNRESET')], [{ method: 'GET' }, err('ECONNREFUSED')], [{ method: 'GET' }, err('EP_TIMEOUT')]] as const) {
      const c = clock();
      let n = 0;
      await expect(withConnectionRetry(async () => { n++; throw failure; }, request, { timeoutMs: 30_000, now: c.now, sleep: c.sleep })).rejects.toBe(failure);
      expect(n).toBe(1);
      expect(c.waits).toEqual([]);
    }
  });

  it('does not wait past the deadline: the failure is thrown when no time is left for another try', async () => {
    const c = clock();
    let n = 0;
    const failure = err('ECONNRESET');
    const p = withConnectionRetry(async () => { n++; c.advance(990); throw failure; }, { method: 'GET' }, { timeoutMs: 1_000, now: c.now, sleep: c.sleep, random: () => 1 });
    await expect(p).rejects.toBe(failure);
    expect(n).toBe(1);
  });
});
