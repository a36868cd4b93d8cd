import { mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync, mkdirSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { watchManifestFiles, ignoreNonManifest } from '../../src/reconciler/watch/files.js';
import { WatchLoop, type RunContext, type WatchEvent } from '../../src/reconciler/watch/loop.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const loops: WatchLoop[] = [];
afterEach(async () => { for (const l of loops.splice(0)) await l.stop(); });

function loop(run: (ctx: RunContext) => Promise<any>, extra: Partial<ConstructorParameters<typeof WatchLoop>[0]> = {}) {
  const events: WatchEvent[] = [];
  const l = new WatchLoop({ run, debounceMs: 30, retryBaseMs: 20, retryCapMs: 40, random: () => 1, onEvent: (e) => events.push(e), ...extra });
  loops.push(l);
  return { l, events };
}

describe('WatchLoop', () => {
  it('debounces a burst of saves into one run, with the paths that changed and a run id', async () => {
    const runs: RunContext[] = [];
    const { l } = loop(async (ctx) => { runs.push(ctx); });
    l.notify('a.yaml'); await sleep(5); l.notify('b.yaml'); await sleep(5); l.notify('a.yaml');
    await sleep(60); await l.idle();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ runId: 'run-1', trigger: 'change' });
    expect(runs[0].paths.sort()).toEqual(['a.yaml', 'b.yaml']);
  });

  it('never overlaps runs: saves during a run coalesce into one follow-up run', async () => {
    let active = 0, peak = 0;
    const runs: string[] = [];
    const { l } = loop(async (ctx) => { active++; peak = Math.max(peak, active); runs.push(ctx.trigger); await sleep(ctx.trigger === 'start' ? 200 : 10); active--; });
    l.request('start', []);
    await sleep(10);
    l.notify('x.yaml'); await sleep(40); l.notify('y.yaml'); await sleep(40);
    await l.idle(); await sleep(100); await l.idle();
    expect(peak).toBe(1);
    expect(runs).toEqual(['start', 'change']);
  });

  it('an invalid save waits for the next save; an API failure retries with backoff until it succeeds', async () => {
    let calls = 0;
    const { l, events } = loop(async () => {
      calls++;
      if (calls === 1) return { status: 'invalid' };
      if (calls < 4) throw new Error('connect ECONNREFUSED');
      return { status: 'ok' };
    });
    l.request('start', []);
    await sleep(20); await l.idle();
    expect(calls).toBe(1); // invalid: nothing scheduled
    l.notify('a.yaml');
    await sleep(300);
    expect(calls).toBe(4);
    const retries = events.filter((e) => e.type === 'retry-scheduled');
    expect(retries.map((e) => (e as any).attempt)).toEqual([1, 2]);
    expect(events.filter((e) => e.type === 'run-end').map((e) => (e as any).status)).toEqual(['invalid', 'retry', 'retry', 'ok']);
  });

  it('runs periodically with --interval, from the first run on: no tick takes the first run\'s place', async () => {
    vi.useFakeTimers();
    try {
      const triggers: string[] = [];
      const { l } = loop(async (ctx) => { triggers.push(ctx.trigger); }, { intervalMs: 30 });
      await vi.advanceTimersByTimeAsync(100); // the watcher still scanning a large tree
      expect(triggers).toEqual([]);
      l.request('start', []);
      await vi.advanceTimersByTimeAsync(95);
      expect(triggers).toEqual(['start', 'interval', 'interval', 'interval']);
      await l.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('stop() aborts the run in progress and waits for it', async () => {
    let sawAbort = false;
    const { l } = loop(async (ctx) => { await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => { sawAbort = true; r(); })); });
    l.request('start', []);
    await sleep(5);
    await l.stop();
    expect(sawAbort).toBe(true);
  });
});

describe('watchManifestFiles', () => {
  it('reports edits of .yaml/.yml files (including rename-over saves) and ignores others', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ep-watch-'));
    try {
      writeFileSync(join(dir, 'a.yaml'), 'kind: X\n');
      mkdirSync(join(dir, 'sub'));
      const seen: string[] = [];
      const w = watchManifestFiles(dir, (p, ev) => seen.push(`${ev}:${p.slice(dir.length + 1)}`), { stableMs: 30 });
      await w.ready;
      writeFileSync(join(dir, 'notes.txt'), 'x');
      writeFileSync(join(dir, 'a.yaml'), 'kind: Y\n');
      writeFileSync(join(dir, 'sub', 'b.yml'), 'kind: Z\n');
      writeFileSync(join(dir, '.a.yaml.tmp'), 'kind: W\n');
      renameSync(join(dir, '.a.yaml.tmp'), join(dir, 'a.yaml'));
      const until = Date.now() + 3000;
      while (Date.now() < until && !(seen.some((s) => s.endsWith('a.yaml')) && seen.some((s) => s.endsWith('b.yml')))) await sleep(20);
      await w.close();
      expect(seen.some((s) => s === 'change:a.yaml')).toBe(true);
      expect(seen).toContain('add:sub/b.yml');
      expect(seen.some((s) => s.includes('notes.txt'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the filter keeps directories (to descend) and the files the loader reads, nothing else', () => {
    const file = { isFile: () => true } as any;
    const dirSt = { isFile: () => false } as any;
    expect(ignoreNonManifest('/x', '/x/a.yaml', file)).toBe(false);
    expect(ignoreNonManifest('/x', '/x/sub/a.yml', file)).toBe(false);
    expect(ignoreNonManifest('/x', '/x/edgeplane.yaml', file)).toBe(false); // the stack: a change is reported
    expect(ignoreNonManifest('/x', '/x/a.YML', file)).toBe(false); // as the loader reads it: .yaml / .yml in any case
    expect(ignoreNonManifest('/x', '/x/a.json', file)).toBe(true);
    expect(ignoreNonManifest('/x', '/x/sub', dirSt)).toBe(false);
    expect(ignoreNonManifest('/x', '/x/node_modules', dirSt)).toBe(true);
    expect(ignoreNonManifest('/x', '/x/.git/HEAD', undefined)).toBe(true);
    expect(ignoreNonManifest('/x', '/x/.hidden.yaml', file)).toBe(true); // dotfiles are not read
    expect(ignoreNonManifest('/x', '/x/sub/.web.yaml.swp', file)).toBe(true);
    // The root itself may sit under a dot directory.
    expect(ignoreNonManifest('/home/u/.config/edge', '/home/u/.config/edge', dirSt)).toBe(false);
    expect(ignoreNonManifest('/home/u/.config/edge', '/home/u/.config/edge/web.yaml', file)).toBe(false);
    // A link to a directory that holds the root is not followed (it would be watched inside itself).
    const parent = mkdtempSync(join(tmpdir(), 'ep-filter-'));
    try {
      mkdirSync(join(parent, 'root', 'sub'), { recursive: true });
      symlinkSync(parent, join(parent, 'root', 'up'));
      const dirStat = statSync(join(parent, 'root', 'up'));
      const rootReal = realpathSync(join(parent, 'root'));
      expect(ignoreNonManifest(join(parent, 'root'), join(parent, 'root', 'up'), dirStat, rootReal)).toBe(true);
      expect(ignoreNonManifest(join(parent, 'root'), join(parent, 'root', 'sub'), statSync(join(parent, 'root', 'sub')), rootReal)).toBe(false);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
