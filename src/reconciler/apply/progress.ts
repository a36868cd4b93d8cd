import pc from 'picocolors';
import type { DagEvent, DagNode, DagResult } from './dag.js';

/**
 * Progress of an apply, for three audiences: a person at a terminal (one live line with counts),
 * a CI log (one line per step, nothing rewritten), a machine (`--json`, one JSON event a line).
 * Renderers write to a sink and never to the console: the CLI decides where output goes.
 */
export interface ProgressSink {
  write(text: string): void;
}

export interface ProgressRenderer<N extends DagNode = DagNode> {
  event(e: DagEvent<N>): void;
  /** Final summary; also clears a live line. */
  finish(result: DagResult): void;
}

export interface ProgressOptions<N extends DagNode> {
  /** How a step reads for people: `create HTTPSEdge/web`. */
  label: (node: N) => string;
  total: number;
  color?: boolean;
  /** The summary's first word: `Apply`, or `Destroy` for `destroy`. */
  verb?: string;
  now?: () => number;
}

function palette(color: boolean) {
  return pc.createColors(color);
}

export function summaryLine(r: DagResult, color = false, verb = 'Apply'): string {
  const c = palette(color);
  const failed = r.failed.length ? c.red(`${r.failed.length} failed`) : '0 failed';
  const skipped = r.skipped.length ? c.yellow(`${r.skipped.length} skipped`) : '0 skipped';
  return `${verb}: ${c.green(`${r.done.length} done`)}, ${failed}, ${skipped} (${r.total} ${r.total === 1 ? 'step' : 'steps'}) in ${(r.ms / 1000).toFixed(1)}s`;
}

/** Failures and skips spelled out after the summary, so the reason is the last thing a reader sees. */
function problemLines(r: DagResult, labelOf: (id: string) => string): string[] {
  const out: string[] = [];
  for (const f of r.failed) out.push(`  failed  ${labelOf(f.id)}: ${f.error}`);
  for (const s of r.skipped) if (s.because !== 'aborted') out.push(`  skipped ${labelOf(s.id)} (depends on failed ${labelOf(s.because)})`);
  const notStarted = r.skipped.filter((s) => s.because === 'aborted').length;
  if (notStarted) out.push(`  skipped ${notStarted} step${notStarted === 1 ? '' : 's'} not started (aborted: the apply was stopped)`);
  return out;
}

/** One line per finished step: what CI logs want (no carriage returns, no colours unless asked). */
export function lineProgress<N extends DagNode>(sink: ProgressSink, opts: ProgressOptions<N>): ProgressRenderer<N> {
  const c = palette(!!opts.color);
  const labels = new Map<string, string>();
  const labelOf = (id: string) => labels.get(id) ?? id;
  let finished = 0;
  /** Steps never started because the apply was stopped: one line for all of them, not one each. */
  let notStarted = 0;
  const counter = () => `[${String(++finished).padStart(String(opts.total).length)}/${opts.total}]`;
  return {
    event(e) {
      labels.set(e.node.id, opts.label(e.node));
      const l = labelOf(e.node.id);
      if (e.type === 'done') sink.write(`${counter()} ${c.green('done')}    ${l} ${c.dim(`(${Math.round(e.ms)} ms)`)}\n`);
      else if (e.type === 'failed') sink.write(`${counter()} ${c.red('failed')}  ${l}: ${e.error}\n`);
      else if (e.type === 'skipped' && e.because === 'aborted') notStarted++;
      else if (e.type === 'skipped') sink.write(`${counter()} ${c.yellow('skipped')} ${l} (depends on failed ${labelOf(e.because)})\n`);
      else if (e.type === 'retry') sink.write(`        ${c.yellow('retry')}   ${l}: ${e.reason}; attempt ${e.attempt} in ${e.delayMs} ms\n`);
    },
    finish(r) {
      if (notStarted) sink.write(`${c.yellow('skipped')} ${notStarted} step${notStarted === 1 ? '' : 's'} not started (aborted: the apply was stopped)\n`);
      sink.write(summaryLine(r, !!opts.color, opts.verb) + '\n');
    },
  };
}

/**
 * A live line rewritten in place: counts and the step most recently started. Failures are printed
 * above it as they happen, because a live line would overwrite them. Redraws are throttled so a
 * fast apply of thousands of steps does not spend its time painting.
 */
export function ttyProgress<N extends DagNode>(sink: ProgressSink, opts: ProgressOptions<N> & { columns?: number; throttleMs?: number }): ProgressRenderer<N> {
  const c = palette(opts.color ?? true);
  const now = opts.now ?? (() => performance.now());
  const throttle = opts.throttleMs ?? 50;
  const labels = new Map<string, string>();
  const labelOf = (id: string) => labels.get(id) ?? id;
  let done = 0, failed = 0, skipped = 0;
  let current = '';
  let lastDraw = -Infinity;
  let drawn = false;
  const clear = () => { if (drawn) sink.write('\r\x1b[2K'); drawn = false; };
  const draw = (force = false) => {
    const t = now();
    if (!force && t - lastDraw < throttle) return;
    lastDraw = t;
    const counts = `${c.green(`${done} done`)} · ${failed ? c.red(`${failed} failed`) : '0 failed'} · ${skipped ? c.yellow(`${skipped} skipped`) : '0 skipped'} · ${done + failed + skipped}/${opts.total}`;
    const width = opts.columns ?? 100;
    const room = Math.max(10, width - visibleLength(counts) - 4);
    const cur = current.length > room ? current.slice(0, room - 1) + '…' : current;
    sink.write(`\r\x1b[2K${counts}${cur ? `  ${c.dim(cur)}` : ''}`);
    drawn = true;
  };
  return {
    event(e) {
      labels.set(e.node.id, opts.label(e.node));
      if (e.type === 'start') current = labelOf(e.node.id);
      else if (e.type === 'done') done++;
      else if (e.type === 'failed') {
        failed++;
        clear();
        sink.write(`${c.red('failed')}  ${labelOf(e.node.id)}: ${e.error}\n`);
        draw(true);
        return;
      } else if (e.type === 'skipped') skipped++;
      else if (e.type === 'retry') current = `${labelOf(e.node.id)} (retry ${e.attempt}: ${e.reason})`;
      draw();
    },
    finish(r) {
      clear();
      sink.write(summaryLine(r, opts.color ?? true, opts.verb) + '\n');
      for (const l of problemLines(r, labelOf).filter((x) => x.startsWith('  skipped'))) sink.write(l + '\n');
    },
  };
}

/** `--json`: one event per line, stable keys, then a summary event. */
export function jsonProgress<N extends DagNode>(sink: ProgressSink, opts: Pick<ProgressOptions<N>, 'label'> & { fields?: (node: N) => Record<string, unknown>; clock?: () => Date }): ProgressRenderer<N> {
  const clock = opts.clock ?? (() => new Date());
  const put = (v: Record<string, unknown>) => sink.write(JSON.stringify({ ts: clock().toISOString(), ...v }) + '\n');
  return {
    event(e) {
      const base = { event: e.type, step: e.node.id, label: opts.label(e.node), ...(opts.fields?.(e.node) ?? {}) };
      if (e.type === 'start') put(base);
      else if (e.type === 'done') put({ ...base, ms: Math.round(e.ms) });
      else if (e.type === 'failed') put({ ...base, ms: Math.round(e.ms), error: e.error });
      else if (e.type === 'skipped') put({ ...base, because: e.because });
      else put({ ...base, attempt: e.attempt, delay_ms: e.delayMs, reason: e.reason });
    },
    finish(r) {
      put({ event: 'summary', total: r.total, done: r.done.length, failed: r.failed.length, skipped: r.skipped.length, ms: Math.round(r.ms) });
    },
  };
}

export { problemLines };

function visibleLength(s: string): number {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\x1b\[[0-9;]*m/g, '').length;
}
