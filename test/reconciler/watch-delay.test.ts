import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { delay } from '../../src/reconciler/watch/session.js';

describe('watch: the wait before an apply', () => {
  it('leaves no abort listener on the session\'s signal, however many waits it makes (no MaxListenersExceededWarning)', async () => {
    const ac = new AbortController();
    for (let i = 0; i < 30; i++) await delay(1, ac.signal);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    // Aborted while waiting: it ends at once, and its listener goes too.
    const t0 = performance.now();
    const waiting = delay(60_000, ac.signal);
    ac.abort();
    await waiting;
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });
});
