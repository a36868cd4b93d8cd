import { jsonProgress, lineProgress, ttyProgress, type ProgressRenderer, type ProgressSink } from '../reconciler/apply/progress.js';
import type { Step } from '../reconciler/plan/types.js';
import type { Output } from './output.js';

export function stepLabel(s: Step): string {
  return `${s.action} ${s.object.identity}${s.module ? ` ${s.module}` : ''}`;
}

/** `--json` → JSON events; a terminal → a live line; anything else (CI logs) → a line per step. */
export function progressFor(out: Output, opts: { json?: boolean; color: boolean; total: number; verb?: string }): ProgressRenderer<Step> {
  const sink: ProgressSink = { write: (t) => (out.write ? out.write(t) : out.line(t.replace(/\n$/, ''))) };
  if (opts.json) return jsonProgress(sink, { label: stepLabel, fields: (s) => ({ action: s.action, identity: s.object.identity, ...(s.object.id ? { id: s.object.id } : {}) }) });
  if (out.isTTY && out.write) return ttyProgress(sink, { label: stepLabel, total: opts.total, color: opts.color, columns: out.columns, verb: opts.verb });
  return lineProgress(sink, { label: stepLabel, total: opts.total, color: opts.color, verb: opts.verb });
}
