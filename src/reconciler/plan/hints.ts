import type { KindRuntimeConfig } from '../../kinds/types.js';
import { isRefTarget } from '../../kinds/registry.js';
import { NormMemo, tokenReader, type Normal, type Settlement, type Symbolize } from './normalize.js';
import { pairWith, type Paired } from './phases/match.js';
import { sameMetadata } from './phases/marker.js';
import type { DesiredObject, ObservedObject } from './state.js';

/**
 * The speed layer of planning, behind one seam: what is worked out while the live pages arrive,
 * for the diff to start from instead of from nothing. `preparePlan` tells it what it reads (`read`
 * as each live object arrives, `desire` as each manifest object's desired objects are made) and
 * gives it turns (`observeNext`); `diff` takes `memo` and `paired`. All of it is optional: a plan
 * made without hints (`PrepareOptions.hints: false`) is the reference a plan with them must equal
 * (test/reconciler/plan-hints.property.test.ts, on random stacks and live states).
 *
 * What it works out:
 * - both sides' normal forms, into the planner's memo, with ids read through the ownership
 *   markers seen so far (the memo recomputes any whose look-ups read otherwise once the plan has
 *   matched its objects);
 * - each live object of this stack paired with the desired object its marker names (what the
 *   match phase would look up), and found settled when the two are the same.
 * Its state is this plan's: two plans in one process (the agent's) share nothing.
 */
export class PlanHints {
  readonly memo = new NormMemo('plan');
  /** What the match phase would look up for each desired object; undefined when identities repeat (match decides). */
  paired: Paired | undefined = { owned: [], settled: [] };
  /** Ids of this stack's objects that references can name → their identity: how the plan will read references to them. */
  private readonly owned = new Map<string, string>();
  private readonly provisional: Symbolize = tokenReader(this.owned);
  /** Live objects read and not yet observed. */
  private readonly ahead: ObservedObject[] = [];
  private observedUpTo = 0;
  private desired: DesiredObject[] = [];
  /** Desired objects with no parent by identity, as their place in `desired`; children are found beside their parent. */
  private readonly topLevel = new Map<string, number>();
  private made = 0;
  /** Each desired object's normal form, by its place: compared with its live object's as that is read. */
  private readonly wantForms: Normal[] = [];
  private all: Map<string, number> | undefined;
  private parentAt = -1;
  private parentId: string | undefined;

  constructor(private readonly stack: string, private readonly config: KindRuntimeConfig) {}

  /** A live object was read from a page. */
  read(o: ObservedObject): void {
    this.ahead.push(o);
    if (o.owner.type === 'this' && o.marker && isRefTarget(o.kind)) this.owned.set(o.id, o.marker.id);
  }

  /** One manifest object's desired objects were made: `desired` from `from` on. */
  desire(desired: DesiredObject[], from: number): void {
    this.desired = desired;
    this.topLevel.set(desired[from].identity, from);
    // Identities are unique in a valid stack (validation refuses a name used twice); two objects
    // with no parent under one identity leave the pairing to match.
    if (this.topLevel.size !== ++this.made) this.paired = undefined;
    for (let j = from; j < desired.length; j++) {
      const d = desired[j];
      this.wantForms.push(this.memo.normalForm(d.kind, d.body, this.provisional, this.config));
    }
  }

  /** Works out what it can for the next live object read; false when there is none (yet). */
  observeNext(): boolean {
    if (this.observedUpTo >= this.ahead.length) return false;
    const o = this.ahead[this.observedUpTo];
    this.ahead[this.observedUpTo++] = undefined as unknown as ObservedObject; // let go of: the plan keeps its own list
    const { memo, config } = this;
    memo.freshForm(o.kind, o.body, this.provisional, config);
    const at = o.owner.type === 'this' && o.marker ? this.placeOf(o, o.marker.id) : undefined;
    let settled: Settlement | undefined;
    if (at !== undefined) {
      const d = this.desired[at];
      if (o.kind.embeds) [this.parentAt, this.parentId] = [at, o.id];
      if (this.paired) pairWith(this.paired, at, o);
      settled = d.kind === o.kind ? memo.settleAhead(d.body, o.body, config, this.wantForms[at]) : undefined;
      if (settled && this.paired?.owned[at] === o && sameMetadata(this.stack, d, o)) this.paired.settled[at] = settled;
    }
    if (!settled) memo.keep(o.body); // the plan compares it, or reads it for something else
    return true;
  }

  /**
   * A child is read right after its parent (`observeItem`), and the manifests list it beside its
   * parent's other children (`DesiredBuilder.add`): it is looked for there first, among a few
   * objects at hand, before in the index of every identity (a look-up far slower at this size).
   */
  private placeOf(o: ObservedObject, identity: string): number | undefined {
    const desired = this.desired;
    if (o.parentId !== undefined && o.parentId === this.parentId) {
      const p = desired[this.parentAt].identity;
      for (let j = this.parentAt + 1; j < desired.length && desired[j].parentIdentity === p; j++) if (desired[j].identity === identity) return j;
    }
    return this.topLevel.get(identity) ?? (this.all ??= new Map(desired.map((d, j) => [d.identity, j]))).get(identity);
  }
}
