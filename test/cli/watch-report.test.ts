import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reporter } from '../../src/cli/commands/watch.js';
import type { Output } from '../../src/cli/output.js';
import { planFromState } from '../helpers/plan-lists.js';
import type { Plan } from '../../src/reconciler/plan/types.js';
import { expandObserved } from '../helpers/scenario.js';

function capture(): { out: Output; lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: { line: (t) => lines.push(t), error: (t) => errors.push(t), json: (v) => lines.push(JSON.stringify(v)) } };
}

describe('edgeplane watch: what a run prints', () => {
  it('an invalid run with no problem list says why (a file gone between listing and reading)', async () => {
    const c = capture();
    const report = reporter(c.out, false);
    report({ type: 'run-end', runId: 'run-3', status: 'invalid', ms: 4, error: "ENOENT: no such file or directory, open 'edges.yaml'" });
    expect(c.errors).toEqual(["[run-3] ENOENT: no such file or directory, open 'edges.yaml'"]);
    expect(c.lines).toEqual(['[run-3] invalid in 4 ms']);
  });

  it('a run that ended well prints one line; a failed one its error, to be retried', async () => {
    const c = capture();
    const report = reporter(c.out, false);
    report({ type: 'run-end', runId: 'run-1', status: 'ok', ms: 12 });
    report({ type: 'run-end', runId: 'run-2', status: 'retry', ms: 30, error: 'HTTP 503' });
    expect(c.lines).toEqual(['[run-1] ok in 12 ms']);
    expect(c.errors).toEqual(['[run-2] failed: HTTP 503']);
  });
});

describe('edgeplane watch --interval: drift', () => {
  /** A real plan with one update (a scenario's), and the same plan with other changes. */
  async function plans(): Promise<{ drift: Plan; other: Plan; none: Plan }> {
    const dir = join(import.meta.dirname, '..', 'scenarios', 'field-removed-back-to-default');
    const cwd = join(import.meta.dirname, '..', '..');
    const observed = JSON.parse(readFileSync(join(dir, 'observed.json'), 'utf8'));
    const drift = (await planFromState({ root: relative(cwd, join(dir, 'manifests')), cwd, stack: 'prod', env: {} }, expandObserved(observed, 'prod'), 'https://api.example.test')).plan!;
    expect(drift.steps.length).toBeGreaterThan(0);
    const other: Plan = { ...drift, steps: drift.steps.map((s) => ({ ...s, changes: [...s.changes, { path: 'description', before: 'x', after: 'y' }] })) };
    return { drift, other, none: { ...drift, steps: [] } };
  }
  const read = { full: true, requests: 3 };

  it('held-back deletions and the steps waiting for them are named; nothing applied is not "no changes"', async () => {
    const { none } = await plans();
    const c = capture();
    reporter(c.out, false)({ type: 'plan', runId: 'run-2', plan: none, mode: 'apply', skippedPrunes: 1, heldBack: ['HTTPSEdge/web/routes/new'], read });
    expect(c.lines).toEqual([
      '[run-2] 1 deletion step(s) held back: run watch with --prune (or apply) to delete',
      '[run-2] held back with them, as they wait for those deletions: HTTPSEdge/web/routes/new',
      '[run-2] read the whole live state',
      '[run-2] nothing else to apply',
    ]);
  });

  it('prints a drift in full once; the same drift found again is one line, a different one in full', async () => {
    const { drift, other, none } = await plans();
    const c = capture();
    const report = reporter(c.out, false);
    report({ type: 'plan', runId: 'run-2', plan: drift, mode: 'drift', skippedPrunes: 0, heldBack: [], read });
    report({ type: 'plan', runId: 'run-3', plan: drift, mode: 'drift', skippedPrunes: 0, heldBack: [], read });
    report({ type: 'plan', runId: 'run-4', plan: other, mode: 'drift', skippedPrunes: 0, heldBack: [], read });
    report({ type: 'plan', runId: 'run-5', plan: none, mode: 'drift', skippedPrunes: 0, heldBack: [], read });
    report({ type: 'plan', runId: 'run-6', plan: other, mode: 'drift', skippedPrunes: 0, heldBack: [], read });
    const text = c.lines.join('\n');
    expect(text.match(/drift: the live state no longer matches/g)).toHaveLength(3); // runs 2, 4 and 6
    expect(c.lines).toContain('[run-3] drift unchanged since run-2 (--repair undoes it)');
    expect(c.lines).toContain('[run-5] no drift');
    expect(text.match(/^\[run-\d\] Plan: /gm)).toHaveLength(3);
    // Every line a run prints carries its run id, the plan's too.
    for (const line of text.split('\n')) expect(line).toMatch(/^\[run-\d\]/);
  });

  it('--plan-only prints a plan in full once; the same plan again (an --interval tick) is one line', async () => {
    const { drift, other } = await plans();
    const c = capture();
    const report = reporter(c.out, false);
    report({ type: 'plan', runId: 'run-1', plan: drift, mode: 'preview', skippedPrunes: 0, heldBack: [], read });
    report({ type: 'plan', runId: 'run-2', plan: drift, mode: 'preview', skippedPrunes: 0, heldBack: [], read });
    report({ type: 'plan', runId: 'run-3', plan: other, mode: 'preview', skippedPrunes: 0, heldBack: [], read });
    expect(c.lines).toContain('[run-2] plan unchanged since run-1');
    expect(c.lines.join('\n').match(/^\[run-\d\] Plan: /gm)).toHaveLength(2); // runs 1 and 3
  });

  it('a save whose apply also undoes drift reported (not repaired) before says so, naming the objects', async () => {
    const { drift } = await plans();
    const c = capture();
    const report = reporter(c.out, false);
    report({ type: 'plan', runId: 'run-2', plan: drift, mode: 'drift', skippedPrunes: 0, heldBack: [], read });
    report({ type: 'plan', runId: 'run-3', plan: drift, mode: 'apply', skippedPrunes: 0, heldBack: [], read });
    expect(c.lines).toContain(`[run-3] this apply also undoes the drift reported in run-2: ${drift.steps[0].object.identity}`);
    // Once applied, the drift is gone: a later save says nothing of it.
    report({ type: 'plan', runId: 'run-4', plan: drift, mode: 'apply', skippedPrunes: 0, heldBack: [], read });
    expect(c.lines.filter((l) => l.includes('also undoes'))).toHaveLength(1);
  });

  it('drift of secrets only (a rotated {file}, a new {env} value) says the source changed, not the live state', async () => {
    const { drift } = await plans();
    const secret: Plan = { ...drift, steps: drift.steps.map((st) => ({ ...st, changes: [{ path: 'webhook_verification.secret', before: '(sensitive)', after: '(sensitive)', sensitive: true }] })) };
    const c = capture();
    reporter(c.out, false)({ type: 'plan', runId: 'run-2', plan: secret, mode: 'drift', skippedPrunes: 0, heldBack: [], read });
    expect(c.lines).toContain("[run-2] drift: a secret's value changed at its source ({env} or {file}), not in the live state; the next apply (or --repair) sends it");
    const d = capture();
    reporter(d.out, false)({ type: 'plan', runId: 'run-2', plan: drift, mode: 'drift', skippedPrunes: 0, heldBack: [], read });
    expect(d.lines).toContain('[run-2] drift: the live state no longer matches the manifests (--repair undoes it)');
  });

  it('--repair says it is undoing drift and shows what, before the steps run', async () => {
    const { drift } = await plans();
    const c = capture();
    const report = reporter(c.out, false);
    report({ type: 'plan', runId: 'run-2', plan: drift, mode: 'repair', skippedPrunes: 0, heldBack: [], read });
    expect(c.lines[1]).toBe('[run-2] drift: the live state no longer matches the manifests; undoing it (--repair)');
    expect(c.lines[2]).toContain(`~ update ${drift.steps[0].object.identity}`);
  });
});
