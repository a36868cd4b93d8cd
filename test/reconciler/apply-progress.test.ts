import { describe, expect, it } from 'vitest';
import { runDag, type DagNode, type DagResult } from '../../src/reconciler/apply/dag.js';
import { jsonProgress, lineProgress, summaryLine, ttyProgress, type ProgressRenderer } from '../../src/reconciler/apply/progress.js';

interface S extends DagNode { label: string }
const steps: S[] = [
  { id: 'a', dependsOn: [], label: 'create CertificateAuthority/root' },
  { id: 'b', dependsOn: ['a'], label: 'create HTTPSEdge/web' },
  { id: 'c', dependsOn: ['b'], label: 'create HTTPSEdge/web/routes/api' },
  { id: 'd', dependsOn: [], label: 'update FailoverBackend/pool' },
];

async function render(make: (sink: { write(t: string): void }) => ProgressRenderer<S>): Promise<string> {
  let out = '';
  const r = make({ write: (t) => (out += t) });
  const result = await runDag(steps, async (s, ctx) => {
    if (s.id === 'd') ctx.retrying({ attempt: 2, delayMs: 250, reason: 'HTTP 503' });
    if (s.id === 'b') throw new Error('HTTP 409 ERR_HOSTPORT_IN_USE: hostports: a.example:443 is taken');
  }, { parallelism: 1, onEvent: (e) => r.event(e), now: () => 0 });
  r.finish(result);
  return out;
}

describe('progress renderers', () => {
  it('CI logs: one line per step, no carriage returns or colours, failures and skips with reasons', async () => {
    const out = await render((sink) => lineProgress(sink, { label: (s) => s.label, total: 4 }));
    expect(out).not.toMatch(/\r|\x1b/);
    expect(out.trim().split('\n')).toEqual([
      '[1/4] done    create CertificateAuthority/root (0 ms)',
      '[2/4] failed  create HTTPSEdge/web: HTTP 409 ERR_HOSTPORT_IN_USE: hostports: a.example:443 is taken',
      '[3/4] skipped create HTTPSEdge/web/routes/api (depends on failed create HTTPSEdge/web)',
      '        retry   update FailoverBackend/pool: HTTP 503; attempt 2 in 250 ms',
      '[4/4] done    update FailoverBackend/pool (0 ms)',
      'Apply: 1 done, 1 failed, 1 skipped (4 steps) in 0.0s'.replace('1 done', '2 done'),
    ]);
  });

  it('the summary counts one step in the singular', () => {
    const one: DagResult = { total: 1, done: ['a'], failed: [], skipped: [], ms: 40 };
    expect(summaryLine(one)).toBe('Apply: 1 done, 0 failed, 0 skipped (1 step) in 0.0s');
  });

  it('TTY: a live line with counts, failures printed above it, a clean summary at the end', async () => {
    const out = await render((sink) => ttyProgress(sink, { label: (s) => s.label, total: 4, color: false, throttleMs: 0, columns: 80 }));
    expect(out).toContain('\r\x1b[2K');
    expect(out).toMatch(/2 done · 1 failed · 1 skipped · 4\/4/);
    expect(out).toContain('failed  create HTTPSEdge/web: HTTP 409');
    const lastLines = out.split('\n').slice(-3).join('\n');
    expect(lastLines).toContain('Apply: 2 done, 1 failed, 1 skipped (4 steps)');
    expect(lastLines).toContain('skipped create HTTPSEdge/web/routes/api (depends on failed create HTTPSEdge/web)');
    // Every live (rewritten) line fits the terminal, so it never wraps and leaves debris.
    const live = out.split('\r\x1b[2K').slice(1).map((seg) => seg.split('\n')[0]).filter((seg) => seg.includes(' · '));
    expect(live.length).toBeGreaterThan(3);
    for (const seg of live) expect(seg.length).toBeLessThanOrEqual(80);
  });

  it('--json: one parseable event per line and a summary', async () => {
    const out = await render((sink) => jsonProgress(sink, { label: (s) => s.label, clock: () => new Date(0) }));
    const events = out.trim().split('\n').map((l) => JSON.parse(l));
    expect(events.map((e) => `${e.event}:${e.step ?? ''}`)).toEqual([
      'start:a', 'done:a', 'start:b', 'failed:b', 'skipped:c', 'start:d', 'retry:d', 'done:d', 'summary:',
    ]);
    expect(events[3]).toMatchObject({ error: expect.stringContaining('409'), label: 'create HTTPSEdge/web' });
    expect(events[4]).toMatchObject({ because: 'b' });
    expect(events.at(-1)).toMatchObject({ total: 4, done: 2, failed: 1, skipped: 1 });
  });
});
