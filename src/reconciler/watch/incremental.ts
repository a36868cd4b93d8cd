import type { ApiClient } from '../../client/api-client.js';
import { ApiRequestError, PAGE_SIZE } from '../../client/api-client.js';
import type { Body, KindDef } from '../../kinds/types.js';
import { collectionPath } from '../../contract/paths.js';
import type { ApplyResult } from '../apply/execute.js';
import type { Prepared } from '../plan/prepare.js';
import type { PlanInput } from '../plan/prepare.js';
import { diff } from '../plan/diff.js';
import type { LiveView } from '../plan/live-view.js';
import { NormMemo } from '../plan/normalize.js';
import type { Plan } from '../plan/types.js';
import { listedKinds, readLiveState } from '../state/read-state.js';
import { DesiredState } from './desired-state.js';
import { LiveIndex } from './live-index.js';
import type { ManifestFile } from './manifest-cache.js';
import { planSubset } from './subset.js';
import { loadStackPolicies, NO_POLICIES, policySignature, type LoadedPolicies } from '../policy/load.js';
import { checkPlan } from '../policy/evaluate.js';
import type { PolicySet } from '../policy/types.js';
import { hasErrors } from '../manifests/problems.js';

/** `HTTPSEdge/web` for `HTTPSEdge/web/routes/api`: the object a list page (or a GET) returns whole. */
export function topIdentity(identity: string): string {
  return identity.split('/').slice(0, 2).join('/');
}

/** GETs in flight at once when re-reading objects by id. */
const REREAD_PARALLELISM = 8;

/** How a run read the live state: every list page, or a GET per object a save or apply touched. */
export interface LiveRead { full: boolean; requests: number }

export interface IncrementalPrepared extends Omit<Prepared, 'observed'> {
  /** Every live object read, with the indexes the plan read (kept between runs). */
  live: LiveView;
  read: LiveRead;
  /** Identities whose desired state differs from the previous run's. */
  changed: string[];
  /** How many manifest objects the plan compared with their live objects: `all`, or those a save may have changed. */
  planned: number | 'all';
}

/**
 * The planning side of a watch session, kept warm between runs. A full plan reads every list page
 * and normalises every object; after a save only a few objects differ, so this keeps:
 *
 * - the manifests per file (`DesiredState`): a save's file is validated, checked against the
 *   others and built into desired objects again, the other files not;
 * - the live state as last read (`LiveIndex`), re-reading by id only the top-level objects a save
 *   changed or the last apply wrote (an edge comes back with its routes). Everything is read again
 *   at start, on `--interval` runs, and after any run that failed, so drift made elsewhere shows
 *   there;
 * - which manifest objects the last plan found unchanged: after a save the plan is made over the
 *   objects that changed, those not found unchanged, and what refers to them (`planSubset`); the
 *   others are matched only. A full plan (every object compared) is made at start, after any
 *   full read of the live state, and after a failure.
 */
export class IncrementalPlanner {
  private readonly memo = new NormMemo();
  private readonly desired: DesiredState;
  private readonly live: LiveIndex;
  /** Identities the last plan that looked at them did not find unchanged (steps, conflicts, warnings, new). */
  private unsettled = new Set<string>();
  private fullPlanNext = true;
  /** The stack's policies (docs/policies.md), loaded again when a file they are read from changed. */
  private policies: PolicySet = NO_POLICIES;
  /** What they were loaded from (`policySignature`), and what loading them gave. */
  private policySource: string | undefined;
  private loadedPolicies: LoadedPolicies | undefined;
  /** Top-level ids the last apply wrote: read again before the next plan. */
  private readonly dirty = new Set<string>();

  constructor(private readonly input: PlanInput, private readonly client: ApiClient, private readonly load: (root: string) => ManifestFile[]) {
    this.desired = new DesiredState({ stack: input.stack, strict: input.strict, env: input.env, cwd: input.cwd ?? process.cwd() });
    this.live = new LiveIndex(input.stack, this.desired.byIdentity);
  }

  /** The files the manifests' `{file: …}` secrets are read from, each with its state when the last run read it. */
  secretFiles(): Map<string, string> {
    return this.desired.secretFiles();
  }

  /** The next plan reads everything (after a failure, or for a drift check). */
  invalidate(): void {
    this.live.loaded = false;
    this.dirty.clear();
    this.fullPlanNext = true;
  }

  async prepare(opts: { full?: boolean } = {}): Promise<IncrementalPrepared> {
    const { problems, changed } = await this.desired.updateKeyed(this.load(this.input.root), (stack, asks) => this.client.fingerprintSecrets(stack, asks));
    // A run that was to read everything (a drift check, a retry) but stops at the manifests'
    // problems leaves that read to the next run that plans.
    if (!changed && opts.full) this.invalidate();
    if (!changed) return { problems, secrets: new Map(), identities: new Set<string>(), live: this.live, read: { full: false, requests: 0 }, changed: [], planned: 0 };
    this.live.redeclared(changed);
    // The policies, checked on each plan of the objects it covers (those a save may have changed).
    // Loaded again when edgeplane.yaml or a policy file changed: then every object is planned, as
    // a policy saved alone (no manifest changed) may deny or warn of objects no save touched.
    const source = policySignature(this.input.root);
    if (source !== this.policySource || !this.loadedPolicies) {
      if (this.loadedPolicies) this.fullPlanNext = true;
      this.loadedPolicies = loadStackPolicies(this.input.root, this.input.cwd);
      this.policySource = source;
    }
    const policies = this.loadedPolicies;
    if (hasErrors(policies.problems)) {
      // Fixed by the next save of a policy file: every object is planned then.
      this.fullPlanNext = true;
      return { problems: [...problems, ...policies.problems], secrets: new Map(), identities: new Set<string>(), live: this.live, read: { full: false, requests: 0 }, changed, planned: 0 };
    }
    this.policies = policies.set;

    let read = await this.readLive(opts.full === true, changed);
    let plan = this.plan(changed, read.full);
    if (!read.full && plan.steps.some((st) => st.action === 'create' && topIdentity(st.object.identity) === st.object.identity)) {
      // A new object is only looked for among the objects read before: another process (an apply
      // in another terminal, through this watch) may have made it since. Read everything before
      // creating, as apply looks before it creates again.
      const before = read.requests;
      read = await this.readLive(true, changed);
      read = { full: true, requests: before + read.requests };
      plan = this.plan(changed, true);
    }
    return { problems, plan, secrets: this.desired.secrets, identities: this.desired.byIdentity, live: this.live, read, changed, planned: this.planned };
  }

  /**
   * The plan over every object (`full`), or over those a save may have changed (`planSubset`);
   * the two are the same plan. Notes which objects it found unchanged, for the next run.
   */
  private planned: number | 'all' = 'all';

  private plan(changed: string[], full: boolean): Plan {
    const settled = new Set<string>();
    const opts = { ...this.input, target: this.client.target, settled, live: this.live };
    if (full || this.fullPlanNext) {
      const desired = this.desired.all();
      const plan = diff(desired, this.live.all(), opts, this.memo);
      if (this.policies.policies.length) plan.policy = checkPlan(this.policies, { plan, desired, observed: this.live.all() });
      this.unsettled = new Set();
      for (const d of desired) if (!settled.has(d.identity)) this.unsettled.add(d.identity);
      this.fullPlanNext = false;
      this.planned = 'all';
      return plan;
    }
    const sub = planSubset(this.desired, this.live, [...changed, ...this.unsettled]);
    const plan = diff(sub.desired, sub.observed, { ...opts, only: sub.planned }, this.memo);
    if (this.policies.policies.length) plan.policy = checkPlan(this.policies, { plan, desired: sub.desired, observed: sub.observed });
    const known = this.desired.byIdentity;
    this.planned = 0;
    for (const id of sub.planned) if (known.has(id)) this.planned++;
    for (const id of sub.planned) {
      if (settled.has(id) || !known.has(id)) this.unsettled.delete(id);
      else this.unsettled.add(id);
    }
    return plan;
  }

  private async readLive(full: boolean, changed: string[]): Promise<LiveRead> {
    if (full || !this.live.loaded) {
      const before = this.requestCount();
      this.live.load(await readLiveState(this.client));
      this.dirty.clear();
      return { full: true, requests: this.requestCount() - before };
    }
    const ids = new Map<string, KindDef>();
    for (const top of new Set(changed.map(topIdentity))) {
      for (const o of this.live.copies(top)) if (!o.parentId) ids.set(o.id, o.kind);
    }
    for (const id of this.dirty) {
      const kind = this.live.get(id)?.kind ?? this.kindOfNewId(id);
      if (kind) ids.set(id, kind);
    }
    // Never more requests than reading everything (a save that touches most objects).
    const pages = listedKinds().reduce((n, k) => n + Math.max(1, Math.ceil(this.live.count(k) / PAGE_SIZE)), 0);
    if (ids.size > pages) return this.readLive(true, changed);
    this.dirty.clear();
    const queue = [...ids];
    await Promise.all(Array.from({ length: Math.min(REREAD_PARALLELISM, queue.length) }, async () => {
      for (let next = queue.shift(); next; next = queue.shift()) await this.reread(next[1], next[0]);
    }));
    return { full: false, requests: ids.size };
  }

  /** A created object's kind, from its id prefix (it is not in the lists yet). */
  private kindOfNewId(id: string): KindDef | undefined {
    return listedKinds().find((k) => id.startsWith(`${k.idPrefix}_`));
  }

  private async reread(kind: KindDef, id: string): Promise<void> {
    let resp: Body | undefined;
    try {
      resp = await this.client.getObject(`${collectionPath(kind, null)}/${id}`);
    } catch (err) {
      if (!(err instanceof ApiRequestError && err.status === 404)) throw err;
    }
    this.live.put(kind, id, resp);
  }

  private requestCount(): number {
    return Object.values(this.client.counts).reduce((a, b) => a + b, 0);
  }

  /**
   * After an apply: the top-level objects it wrote are read again before the next plan (their
   * responses carry what the service made of the writes). A failed or skipped step means the
   * live state is not known well enough: the next plan reads everything.
   */
  applied(plan: Plan, result: ApplyResult): void {
    if (result.failed.length || result.skipped.length) return this.invalidate();
    for (const step of plan.steps) {
      const id = step.object.id;
      const o = id ? this.live.get(id) : undefined;
      if (o) this.dirty.add(o.parentId ?? o.id);
      const top = topIdentity(step.object.identity);
      for (const c of this.live.copies(top)) if (!c.parentId) this.dirty.add(c.id);
      const made = result.created[top];
      if (made) this.dirty.add(made);
    }
  }
}
