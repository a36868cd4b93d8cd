import type { ApiClient } from '../client/api-client.js';
import { getStack, type Commit, type RunOutcome, type RunTrigger } from '../client/sync-record.js';
import type { KindRuntimeConfig } from '../kinds/types.js';
import { applyPlan } from '../reconciler/apply/execute.js';
import { gatePlan } from '../reconciler/apply/gate.js';
import { secretsFromMap } from '../reconciler/apply/materialize.js';
import { preparePlan } from '../reconciler/plan/prepare.js';
import { RunRecord } from '../reconciler/apply/run-record.js';
import { acquireStackLock, StackLockTimeout } from '../reconciler/lock/stack-lock.js';
import { formatProblem } from '../reconciler/manifests/problems.js';
import { stackSafety } from '../reconciler/manifests/config.js';
import { selectEnvironment } from '../reconciler/manifests/environments.js';
import { loadStackPolicies } from '../reconciler/policy/load.js';
import { overrideProblems } from '../reconciler/policy/evaluate.js';
import type { StackEntry } from './config.js';

/** What the agent gives every sync. */
export interface SyncContext {
  client: ApiClient;
  /** Who the agent is, in locks and runs: `agent@host, pid N`. */
  holder: string;
  lockTtlSeconds: number;
  planConfig: KindRuntimeConfig;
  env: NodeJS.ProcessEnv;
  /** Aborted at SIGTERM: no further step starts; the steps in flight finish. */
  signal: AbortSignal;
  parallelism?: number;
}

export interface SyncRequest {
  stack: string;
  dir: string;
  /** The environment of edgeplane.yaml to expand the manifests for, when the folder has environments. */
  environment?: string;
  commit: Commit;
  trigger: RunTrigger;
  settings: StackEntry;
  /** When the commit was fetched (this process's clock). */
  fetchedAt: number;
}

export type SyncResult =
  | { outcome: RunOutcome; error?: string; reason?: FailureReason; drift: number; recorded: boolean }
  /**
   * Nothing done: another agent holds the stack (`locked`), already made this commit live
   * (`live`), or made another commit live since this one was fetched (`stale`: fetch again first,
   * so an agent that fetched late never puts an older commit back).
   */
  | { outcome: 'skipped'; why: string; kind: 'locked' | 'live' | 'stale' };

/** Why a sync failed, as the metric's label: a few fixed words. */
export type FailureReason = 'validation' | 'blocked' | 'apply' | 'service';

/**
 * One sync of one stack, under its lock (taken at once or not at all: another agent syncing it is
 * not waited for). A commit already live is not applied again: the service's record says which
 * commit is live, read under the lock, so of several agents the first makes it live and the
 * others find it so. Then the plan against the service; the gates `apply` passes; in `apply` mode
 * (or a drift check that repairs) the executor makes it; else the drift is reported. Every
 * outcome but a skip is recorded as a run; a failure leaves what was made in place.
 */
export async function syncStack(ctx: SyncContext, req: SyncRequest): Promise<SyncResult> {
  let held;
  try {
    held = await acquireStackLock(ctx.client, {
      stack: req.stack, holder: ctx.holder, ttlSeconds: ctx.lockTtlSeconds, timeoutMs: 0, releaseHint: `edgeplane lock release --stack ${req.stack} --force`,
    });
  } catch (err) {
    if (err instanceof StackLockTimeout) return { outcome: 'skipped', why: `locked by ${err.held.holder}`, kind: 'locked' };
    throw err;
  }
  try {
    const summary = await getStack(ctx.client, req.stack);
    const live = summary?.live_commit?.sha;
    if ((req.trigger === 'commit' || req.trigger === 'webhook') && live === req.commit.sha) {
      return { outcome: 'skipped', why: `commit ${req.commit.sha.slice(0, 10)} is live already`, kind: 'live' };
    }
    // The record's times are the service's to the second: a commit made live in the second of the
    // fetch or after it may be newer than the fetched one.
    if (live && live !== req.commit.sha && summary?.live_since && Date.parse(summary.live_since) >= req.fetchedAt - 1000) {
      return { outcome: 'skipped', why: `commit ${live.slice(0, 10)} was made live since ${req.commit.sha.slice(0, 10)} was fetched: fetching again`, kind: 'stale' };
    }
    const record = new RunRecord(ctx.client, { stack: req.stack, commit: req.commit, trigger: req.trigger, holder: ctx.holder, args: `${req.settings.path} --stack ${req.stack}` });
    const result = await planAndApply(ctx, req, record, held);
    // A drift check that found nothing, on a stack already synced at this commit, is not worth a
    // run of its own: the record keeps what changed (the status page lists runs: a drift check a
    // second would push every commit out of the history). Nor is a failure the last run already
    // recorded for this commit (retries with backoff would push the history out of its cap).
    const last = summary?.last_run;
    const quiet = (req.trigger === 'interval' && result.outcome === 'no_changes' && summary?.status === 'synced' && live === req.commit.sha)
      || ((result.outcome === 'failed' || result.outcome === 'blocked') && last?.outcome === result.outcome && last.commit_sha === req.commit.sha)
      // Nor a drift check that finds the drift the last drift check recorded (as many changes, same commit).
      || (req.trigger === 'interval' && result.outcome === 'drifted' && last?.outcome === 'drifted' && last.trigger === 'interval'
        && last.commit_sha === req.commit.sha && summary?.drift_count === result.drift);
    if (!quiet) await record.write();
    return { ...result, recorded: !quiet };
  } finally {
    await held.release();
  }
}

async function planAndApply(ctx: SyncContext, req: SyncRequest, record: RunRecord, held: { signal: AbortSignal; valid(): boolean }): Promise<Omit<Extract<SyncResult, { drift: number }>, 'recorded'>> {
  const done = (outcome: RunOutcome, drift: number, error?: string, reason?: FailureReason) => {
    record.finish(outcome, error);
    return { outcome, drift, ...(error !== undefined ? { error } : {}), ...(reason ? { reason } : {}) };
  };
  let safety;
  try {
    // The stack's own safety settings (edgeplane.yaml), as `apply` reads them.
    safety = stackSafety(req.dir);
  } catch (err) {
    return done('failed', 0, `edgeplane.yaml: ${(err as Error).message}`, 'validation');
  }
  // The policies' overrides the agent's settings give the stack: each must name a policy of it that may be overridden.
  const overrides = req.settings.overridePolicies ?? [];
  const policies = overrides.length ? loadStackPolicies(req.dir, req.dir) : undefined;
  if (policies) {
    const problems = overrideProblems(overrides.map((o) => o.policy), policies.set.policies);
    if (problems.length) return done('failed', 0, `agent.yaml override_policies: ${problems.map((p) => p.replace(/^--override-policy /, '')).join('; ')}`, 'validation');
  }
  let prepared;
  try {
    prepared = await preparePlan({
      ...(policies ? { policies, policyOverrides: overrides } : {}),
      root: req.dir, stack: req.stack, env: ctx.env, config: ctx.planConfig, cwd: req.dir,
      ...(req.environment !== undefined ? { environment: selectEnvironment(req.dir, req.environment, { cwd: req.dir }) } : {}),
      threshold: safety.threshold, protect: safety.protect, allowProtected: req.settings.allowProtectedChanges,
    }, ctx.client);
  } catch (err) {
    return done('failed', 0, `the live state could not be read: ${(err as Error).message}`, 'service');
  }
  const errors = prepared.problems.filter((p) => p.severity === 'error');
  if (errors.length || !prepared.plan) {
    return done('failed', 0, `the manifests do not validate: ${errors.slice(0, 20).map(formatProblem).join('; ')}`, 'validation');
  }
  const plan = prepared.plan;
  record.plan = plan;
  const steps = plan.steps.length;
  const gate = gatePlan(plan, { force: req.settings.force, allowProtectedChanges: req.settings.allowProtectedChanges });
  if (gate.refusal) return done('blocked', steps, gate.refusal.message, 'blocked');
  if (!steps) return done('no_changes', 0);
  const report = req.settings.mode === 'plan' || (req.trigger === 'interval' && req.settings.drift === 'report');
  if (report) return done('drifted', steps);
  const ac = new AbortController();
  const stop = () => ac.abort(new Error('stopping'));
  ctx.signal.addEventListener('abort', stop, { once: true });
  held.signal.addEventListener('abort', stop, { once: true });
  try {
    const result = await applyPlan(plan, {
      client: ctx.client, secrets: secretsFromMap(prepared.secrets), parallelism: ctx.parallelism ?? 8, signal: ac.signal, mayStart: () => held.valid(),
    });
    if (result.stale.length) return done('failed', steps, `objects changed while the plan was applied: ${result.stale.map((s) => s.identity).slice(0, 20).join(', ')}; the next sync plans again`, 'apply');
    if (result.failed.length) return done('failed', steps, `${result.failed.length} of ${steps} steps failed: ${result.failed.slice(0, 5).map((f) => `${f.id}: ${f.error}`).join('; ')}`, 'apply');
    if (result.skipped.length) return done('failed', steps, `stopped after ${result.done.length} of ${steps} steps (${ac.signal.aborted ? 'the agent is stopping or lost the lock' : 'steps skipped'}); the next sync finishes`, 'apply');
    return done('applied', 0);
  } finally {
    ctx.signal.removeEventListener('abort', stop);
    held.signal.removeEventListener('abort', stop);
  }
}
