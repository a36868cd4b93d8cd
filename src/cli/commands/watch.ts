import type { Threshold } from '../../reconciler/plan/safety.js';
import { denyingPolicies } from '../../reconciler/policy/evaluate.js';
import { lineProgress, type ProgressRenderer } from '../../reconciler/apply/progress.js';
import { stackSafety } from '../../reconciler/manifests/config.js';
import { stackOf } from '../environment.js';
import { filesToPlan, manifestFiles, stackDirectory } from '../../reconciler/manifests/load.js';
import { formatProblem } from '../../reconciler/manifests/problems.js';
import { MARKER_CHANGE, type Step } from '../../reconciler/plan/types.js';
import { renderText } from '../../reconciler/render/text.js';
import { summaryLine } from '../../reconciler/render/values.js';
import { startWatchSession, type WatchReport } from '../../reconciler/watch/session.js';
import { withinTimers } from '../duration.js';
import { CliExit, EXIT, onStopSignals } from '../exit.js';
import { useColor, type Output } from '../output.js';
import { stepLabel } from '../progress.js';
import { reconcilerConfig } from '../service-config.js';
import { openTarget, type TargetFlags } from '../target.js';
import { lockedRun, waitsForStateDir, type LockFlags } from '../stack-lock.js';
import type { HeldStackLock } from '../../reconciler/lock/stack-lock.js';
import { parallelismOf } from './apply.js';

export interface WatchFlags extends TargetFlags, LockFlags {
  stack?: string;
  env?: string;
  prune?: boolean;
  planOnly?: boolean;
  interval?: string;
  repair?: boolean;
  parallelism?: string;
  debounce?: string;
  strict?: boolean;
}

function seconds(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new CliExit(EXIT.error, `${flag} must be a positive number of seconds, not ${v}`);
  return withinTimers(n * 1000, flag, v);
}

/** Each line of `text` (a rendered plan) prefixed with the run's tag. */
function tagged(tag: string, text: string): string {
  return text.replace(/\n$/, '').split('\n').map((l) => `${tag}${l}`).join('\n');
}

/** Turns session reports into lines, each prefixed with its run id. */
export function reporter(out: Output, color: boolean) {
  let progress: ProgressRenderer<Step> | undefined;
  /** The drift last reported in full: the same drift found again is one line, not the plan again. */
  let lastDrift: { steps: string; runId: string; ids: Set<string> } | undefined;
  let watched: string | undefined;
  let lastPreview: { steps: string; runId: string } | undefined;
  return (r: WatchReport) => {
    const tag = 'runId' in r ? `[${r.runId}] ` : '';
    switch (r.type) {
      case 'ready':
        watched = r.root;
        return out.line(`watching ${r.root} (stack ${r.stack} on ${r.target}) — Ctrl-C to stop`);
      case 'run-start': return out.line(`${tag}${r.trigger}${r.paths.length ? `: ${r.paths.join(', ')}` : ''}`);
      case 'warnings':
        for (const p of r.problems) out.error(`${tag}${formatProblem(p)}`);
        return;
      case 'invalid':
        for (const p of r.problems) out.error(`${tag}${formatProblem(p)}`);
        return out.line(`${tag}manifests are not valid: nothing applied; waiting for the next save`);
      case 'plan':
        if (r.skippedPrunes) out.line(`${tag}${r.skippedPrunes} deletion step(s) held back: run watch with --prune (or apply) to delete`);
        if (r.heldBack.length) out.line(`${tag}held back with them, as they wait for those deletions: ${r.heldBack.join(', ')}`);
        out.line(`${tag}${r.read.full ? 'read the whole live state' : `re-read ${r.read.requests} object${r.read.requests === 1 ? '' : 's'} by id (what the save or the last apply touched)`}`);
        if ((r.mode === 'apply' || r.mode === 'repair') && r.plan.conflicts.length) {
          for (const k of r.plan.conflicts) out.error(`${tag}conflict: ${k.message}${k.adopt ? ` (adopt it: ${k.adopt})` : ''}`);
          return out.line(`${tag}nothing applied until the conflicts are resolved`);
        }
        if (r.mode === 'apply' && lastDrift) {
          // A save applies the whole plan: drift reported (not repaired) earlier is undone with it. Say so.
          const undone = r.plan.steps.filter((st) => lastDrift!.ids.has(st.id)).map((st) => st.object.identity);
          if (undone.length) out.line(`${tag}this apply also undoes the drift reported in ${lastDrift.runId}: ${[...new Set(undone)].join(', ')}`);
        }
        if (r.mode !== 'drift') lastDrift = undefined;
        if (!r.plan.steps.length) {
          lastDrift = undefined;
          lastPreview = undefined;
          if (r.skippedPrunes) return out.line(`${tag}nothing else to apply`);
          return out.line(`${tag}${r.mode === 'drift' || r.mode === 'repair' ? 'no drift' : 'no changes'}`);
        }
        if (r.mode === 'repair') {
          // Nobody here made these changes: say what is undone before undoing it.
          out.line(`${tag}drift: the live state no longer matches the manifests; undoing it (--repair)`);
          out.line(tagged(tag, renderText(r.plan, { color })));
        }
        if (r.mode === 'apply' || r.mode === 'repair') {
          progress = lineProgress({ write: (t) => out.line(`${tag}${t.replace(/\n$/, '')}`) }, { label: stepLabel, total: r.plan.steps.length, color });
          return r.mode === 'apply' ? out.line(`${tag}${summaryLine(r.plan)}`) : undefined;
        }
        if (r.mode === 'preview') {
          // --plan-only: the same plan again (every --interval tick, a save that changes nothing) is one line.
          const steps = JSON.stringify([r.plan.steps.map((s) => [s.id, s.changes]), r.plan.warnings, r.plan.conflicts, r.plan.blocked]);
          if (lastPreview?.steps === steps) return out.line(`${tag}plan unchanged since ${lastPreview.runId}`);
          lastPreview = { steps, runId: r.runId };
        }
        if (r.mode === 'drift') {
          const steps = JSON.stringify(r.plan.steps.map((s) => [s.id, s.changes]));
          if (lastDrift?.steps === steps) return out.line(`${tag}drift unchanged since ${lastDrift.runId} (--repair undoes it)`);
          lastDrift = { steps, runId: r.runId, ids: new Set(r.plan.steps.map((st) => st.id)) };
          // Only secrets differ: their sources changed (a rotated {file}, a new {env} value), not the live objects.
          const secretsOnly = r.plan.steps.every((st) => st.changes.length > 0 && st.changes.every((ch) => ch.sensitive || ch.path === MARKER_CHANGE));
          out.line(secretsOnly
            ? `${tag}drift: a secret's value changed at its source ({env} or {file}), not in the live state; the next apply (or --repair) sends it`
            : `${tag}drift: the live state no longer matches the manifests (--repair undoes it)`);
        }
        return out.line(tagged(tag, renderText(r.plan, { color })));
      case 'step': return progress?.event(r.event);
      case 'applied': progress?.finish(r.result); progress = undefined; return;
      case 'safety-reloaded':
        return out.line(`${tag}edgeplane.yaml: safety settings changed; planning with them from now on (protect: ${r.protect.length ? r.protect.join(', ') : 'none'}; threshold: ${Math.round(r.threshold.ratio * 100)} % of at least ${r.threshold.minOwned} owned)`);
      case 'superseded': return out.line(`${tag}the manifests changed while planning: nothing applied; the next run plans the newer save`);
      case 'blocked':
        if (denyingPolicies(r.plan.policy).length) return out.line(`${tag}blocked by ${denyingPolicies(r.plan.policy).map((o) => `policy ${o.policy}`).join(', ')}: nothing applied; fix the manifests, or review the plan and run \`edgeplane apply ${watched ?? 'DIR'} --override-policy NAME --reason TEXT\` (watch never applies over it)`);
        if (r.plan.protectedChanges?.length) return out.line(`${tag}blocked: protected objects would be deleted or replaced: nothing applied; review the plan, then run \`edgeplane apply ${watched ?? 'DIR'} --allow-protected-changes\` (watch never applies over it)`);
        return out.line(`${tag}blocked by the safety threshold: nothing applied; review the plan, then run \`edgeplane apply ${watched ?? 'DIR'} --force\` (watch never applies over it)`);
      case 'run-end':
        if (r.status === 'retry') return out.error(`${tag}failed: ${r.error}`);
        if (r.error) out.error(`${tag}${r.error}`); // why a run was invalid, when no problem list said it (a file gone mid-read, conflicts)
        return out.line(`${tag}${r.status} in ${Math.round(r.ms)} ms`);
      case 'retry-scheduled': return out.line(`${tag}retrying in ${(r.delayMs / 1000).toFixed(1)} s (attempt ${r.attempt + 1})`);
      case 'watch-error': return out.error(`watch: ${r.error}`);
    }
  };
}

/** Runs until SIGINT / SIGTERM, then stops cleanly: the run in flight finishes, files and the database are closed. */
export async function watch(out: Output, dir: string, flags: WatchFlags): Promise<void> {
  const intervalMs = seconds(flags.interval, '--interval');
  if (flags.repair && !intervalMs) throw new CliExit(EXIT.error, '--repair needs --interval');
  const debounceMs = flags.debounce === undefined ? undefined : Number(flags.debounce);
  if (debounceMs !== undefined && !(Number.isInteger(debounceMs) && debounceMs >= 0)) throw new CliExit(EXIT.error, `--debounce must be a whole number of milliseconds (0 or more), not ${flags.debounce}`);
  if (debounceMs !== undefined) withinTimers(debounceMs, '--debounce', flags.debounce!);
  const parallelism = parallelismOf(flags);
  // A directory that is not there fails now, not in a run. One with no manifest yet is fine to
  // start writing in, unless --prune would delete the stack's objects at the first run.
  stackDirectory(dir);
  (flags.prune ? filesToPlan : manifestFiles)(dir);
  const { stack, environment } = stackOf(dir, flags);
  // While it runs, plan, apply and export in another terminal reach the same state directory through
  // it. Started while another process held the directory, it goes through that one, and when that
  // one stops, it opens the directory itself (and serves it in turn) or follows the next holder.
  const client = await openTarget(flags, {
    out, root: dir, environment, serveOthers: true, ...waitsForStateDir(out, flags),
    onRetarget: (from, to) => out.line(`${from} stopped serving the state directory: now on ${to}`),
  });
  const run = (held?: HeldStackLock) => new Promise<void>((resolve) => {
    const session = startWatchSession({
      input: { root: dir, stack, strict: flags.strict, env: process.env, config: reconcilerConfig(), environment, ...watchSafety(dir) },
      stackGiven: flags.stack !== undefined,
      readSafety: () => watchSafety(dir),
      client, prune: flags.prune, planOnly: flags.planOnly, intervalMs, repair: flags.repair,
      parallelism, debounceMs, mayStart: held ? () => held.valid() : undefined,
      report: reporter(out, useColor()),
    });
    const stop = () => {
      offStop();
      out.line('stopping…');
      void session.stop().finally(resolve);
    };
    const offStop = onStopSignals(stop);
    if (held?.signal.aborted) stop();
    else held?.signal.addEventListener('abort', stop, { once: true });
  });
  try {
    // The stack's lock is held for as long as watch may apply (not with --plan-only): an apply
    // meanwhile waits, and says who watches.
    if (flags.planOnly) await run();
    else {
      let lostLock = false;
      await lockedRun(out, client, stack, flags, 'watch', async (held, phase) => {
        phase.executing = true; // watch stops its session on a signal, then the lock is released
        await run(held);
        lostLock = held.signal.aborted;
      });
      if (lostLock) throw new CliExit(EXIT.locked, 'watch stopped: it lost the stack\'s lock');
    }
  } finally {
    await client.close();
  }
  out.line('stopped');
}

/** The stack file's threshold and protected objects (at the start, and again before every run). */
function watchSafety(dir: string): { threshold: Threshold; protect: string[] } {
  const { threshold, protect } = stackSafety(dir);
  return { threshold, protect };
}
