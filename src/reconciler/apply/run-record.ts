import { recordRun, type Commit, type NewSyncRun, type RunOutcome, type RunTrigger, type SyncRun } from '../../client/sync-record.js';
import { ApiRequestError, type ApiClient } from '../../client/api-client.js';
import type { Plan } from '../plan/types.js';
import { renderMarkdown } from '../render/markdown.js';
import type { PlanPolicy } from '../policy/types.js';

/**
 * One run of a stack as the service's sync record keeps it (docs/api.md, "Sync record"): what
 * `apply`, `destroy` and the agent tell it at the end of each sync. Started when made; the outcome,
 * the plan and the error are set as the run goes, and `write` sends it once.
 */
export class RunRecord {
  private readonly started = Date.now();
  plan?: Plan;
  outcome?: RunOutcome;
  error?: string;
  /** Nothing to record (a run cancelled at its confirmation). */
  skip = false;

  constructor(readonly client: ApiClient, readonly base: { stack: string; commit: Commit | null; trigger: RunTrigger; holder: string; args?: string }) {}

  finish(outcome: RunOutcome, error?: string): void {
    this.outcome = outcome;
    if (error !== undefined) this.error = error;
  }

  /** The run as the service takes it. */
  value(): NewSyncRun {
    const plan = this.plan;
    const outcome = this.outcome ?? 'failed';
    const steps = plan?.steps.length ?? null;
    const { args: _args, ...base } = this.base;
    return {
      ...base,
      duration_ms: Math.max(0, Date.now() - this.started),
      outcome,
      counts: plan ? { ...plan.summary } : { create: 0, update: 0, replace: 0, delete: 0 },
      // Changes found and not made: all of a plan's steps when it was only reported or refused.
      drift_count: outcome === 'drifted' || outcome === 'blocked' ? steps : null,
      error: this.error ?? null,
      plan_markdown: plan && plan.steps.length ? renderMarkdown(plan, { args: this.base.args }) : null,
      objects: plan && plan.steps.length ? runObjects(plan) : null,
      policy: plan?.policy ? runPolicy(plan.policy) : null,
    };
  }

  /**
   * Sends the run once. A service without the sync record (404: an older release) is not an
   * error of the run: undefined. Other failures throw; the caller decides whether they matter.
   */
  async write(): Promise<SyncRun | undefined> {
    if (this.skip) return undefined;
    try {
      return await recordRun(this.client, this.value());
    } catch (err) {
      if (err instanceof ApiRequestError && err.status === 404) return undefined;
      throw err;
    }
  }
}

/** The most objects a run lists, and fields per object (the service's bounds). */
const OBJECTS_MAX = 500;
const FIELDS_MAX = 50;

/** Each step's object and the fields it changes, in plan order, within the service's bounds. */
export function runObjects(plan: Plan): NonNullable<NewSyncRun['objects']> {
  return plan.steps.slice(0, OBJECTS_MAX).map((s) => ({
    identity: s.object.identity.slice(0, 300),
    action: s.action,
    fields: [...new Set(s.changes.map((c) => c.path.slice(0, 200)))].slice(0, FIELDS_MAX),
    // As the plan marks it (`Step.drift`): the live object moved, or the manifests changed.
    drift: !!s.drift,
  }));
}

/** What the run's record keeps of its policies: the failures that deny and warn, and the overrides with their reasons. */
export function runPolicy(p: PlanPolicy): NonNullable<NewSyncRun['policy']> {
  return {
    denied: p.outcomes.reduce((n, o) => n + o.denied, 0),
    warned: p.outcomes.reduce((n, o) => n + o.warned, 0),
    overrides: p.outcomes.filter((o) => o.override).slice(0, 100).map((o) => ({ policy: o.policy, reason: o.override!.reason.slice(0, 500) })),
  };
}
