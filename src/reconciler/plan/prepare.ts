import type { ApiClient } from '../../client/api-client.js';
import { manifestFiles, readManifest, type SourceDoc } from '../manifests/load.js';
import { defaultEnvironment, Expander, type Environment, type FileDocs } from '../manifests/environments.js';
import type { ManifestObject } from '../manifests/model.js';
import { nestedStackProblems } from '../manifests/config.js';
import { hasErrors, sortProblems, type Problem } from '../manifests/problems.js';
import { resolveSecrets, type ResolvedSecret } from '../manifests/secrets.js';
import { validateManifests, ValidationMemo } from '../manifests/validate.js';
import { DesiredBuilder } from './desired.js';
import { diff, type DiffOptions } from './diff.js';
import { observeItem } from './observed.js';
import { DEFAULT_CONFIG, NormMemo, tokenReader, type Normal, type Settlement } from './normalize.js';
import { manifestKinds } from '../manifests/schema.js';
import type { KindDef } from '../../kinds/types.js';
import { isRefTarget } from '../../kinds/registry.js';
import type { DesiredObject, ObservedObject, Identities } from './state.js';
import { pairWith, type Paired } from './phases/match.js';
import { sameMetadata } from './phases/marker.js';
import type { Plan } from './types.js';
import { streamLiveState } from '../state/read-state.js';

export interface ValidateInput {
  root: string; stack: string; strict?: boolean; cwd?: string;
  /** The environment the manifests are expanded for (`selectEnvironment`); default: the stack file's variables' defaults, no overlays. */
  environment?: Environment;
}

/**
 * Every manifest file under `root`, read and expanded for the environment (variables substituted,
 * overlays applied): what validation reads. `nested` gets the settings files of directories left out.
 */
export function readExpanded(input: ValidateInput, nested: string[]): { docs: SourceDoc[]; problems: Problem[]; files: string[] } {
  const cwd = input.cwd ?? process.cwd();
  const files = manifestFiles(input.root, nested);
  const read: FileDocs[] = files.map((path) => ({ path, ...readManifest(path, cwd) }));
  const expanded = new Expander(input.environment ?? defaultEnvironment(input.root, cwd), cwd).expand(read);
  const docs: SourceDoc[] = [];
  const problems: Problem[] = [];
  for (const f of expanded) {
    for (let i = 0; i < f.docs.length; i++) docs.push(f.docs[i]);
    problems.push(...f.problems);
  }
  return { docs, problems, files };
}

export interface ValidateResult { problems: Problem[]; objects: ManifestObject[]; files: string[] }

/** Load and validate a manifest directory (`validate`, `graph`): every problem, nothing thrown for bad input. */
export function validateDir(input: ValidateInput): ValidateResult {
  const nestedFiles: string[] = [];
  const loaded = readExpanded(input, nestedFiles);
  const v = validateManifests(loaded.docs, { stack: input.stack, strict: input.strict });
  const nested = nestedStackProblems(nestedFiles, input.stack, input.cwd ?? process.cwd());
  return { problems: sortProblems([...nested, ...loaded.problems, ...v.problems]), objects: v.objects, files: loaded.files };
}

export interface PlanInput extends ValidateInput, Omit<DiffOptions, 'target' | 'stack'> {
  /** Where `{env: NAME}` secrets are read from. */
  env: Record<string, string | undefined>;
}

export interface Prepared {
  problems: Problem[];
  plan?: Plan;
  /** Secret values read while planning, by `<identity>#<path>`: apply sends them, nothing else sees them. */
  secrets: Map<string, ResolvedSecret>;
  /** Identities the manifests declare: watch tells a prune (identity gone) from other deletes. */
  identities: Identities;
  /** The live objects the plan was made from. */
  observed: ObservedObject[];
}

/**
 * Gives the event loop a turn once `sliceMs` of work has passed since the last one. Planning
 * requests the list pages first and then parses and validates while they arrive: without turns,
 * each next page would only be asked for once all of that work was done.
 */
class Slicer {
  private last = performance.now();
  constructor(private readonly sliceMs = 4) {}

  /** Whether this slice is used up: then `await slicer.turn()`. (No promise per check.) */
  due(): boolean {
    return performance.now() - this.last >= this.sliceMs;
  }

  async turn(): Promise<void> {
    await new Promise((r) => setImmediate(r));
    this.last = performance.now();
  }
}

export interface PrepareOptions {
  /** Close the client as soon as the list pages are in (`plan`). */
  closeAfterRead?: boolean;
  /**
   * `false`: the diff gets none of what was worked out while the pages arrived (pairs, objects
   * found settled, normal forms computed ahead) and starts from a fresh memo: the reference the
   * hints must agree with (test/reconciler/plan-hints.property.test.ts). Default true.
   */
  hints?: boolean;
}

/**
 * `plan` and the plan step of `apply DIR`. The list pages are requested first, and everything that
 * does not need them is done while they arrive: the manifests are loaded, validated and resolved,
 * each page is observed as it comes, and both sides' normal forms are computed ahead into the
 * planner's memo (with ids read through the ownership markers seen so far; the memo recomputes
 * any whose look-ups read differently once the plan has matched its objects). What is left once
 * the last page is in is matching and comparing. Keeps the secret values it read so apply sends
 * exactly what was fingerprinted, without reading sources twice. With `closeAfterRead` (plan,
 * which needs the client for nothing else) the client is closed as soon as the pages are in:
 * the embedded database's memory is given back before the diff.
 */
export async function preparePlan(input: PlanInput, client: ApiClient, how: PrepareOptions = {}): Promise<Prepared> {
  const config = input.config ?? DEFAULT_CONFIG;
  // Listed before anything is read from the service: a directory that is not there reads nothing.
  const nested: string[] = [];
  const files = manifestFiles(input.root, nested);
  const memo = new NormMemo('plan');
  const observedByKind = new Map<KindDef, ObservedObject[]>();
  const ahead: ObservedObject[] = [];
  /** Ids of this stack's objects that references can name → their identity: how the plan will read references to them. */
  const owned = new Map<string, string>();
  const provisional = tokenReader(owned);
  let pageArrived = () => {};
  let nextPage = new Promise<void>((r) => (pageArrived = r));
  const live = streamLiveState(client, (kind, items, etags) => {
    let list = observedByKind.get(kind);
    if (!list) observedByKind.set(kind, (list = []));
    const from = list.length;
    for (let i = 0; i < items.length; i++) observeItem(kind, items[i], input.stack, list, etags);
    for (let i = from; i < list.length; i++) {
      const o = list[i];
      ahead.push(o);
      if (o.owner.type === 'this' && o.marker && isRefTarget(o.kind)) owned.set(o.id, o.marker.id);
    }
    pageArrived();
    nextPage = new Promise<void>((r) => (pageArrived = r));
  });
  if (how.closeAfterRead) void live.finally(() => client.close()).catch(() => {});
  let liveSettled = false;
  live.then(() => (liveSettled = true), () => (liveSettled = true)); // invalid manifests return before awaiting it; its failure is not theirs
  const slicer = new Slicer();
  const turn = async () => { if (slicer.due()) await slicer.turn(); };
  const none = { secrets: new Map(), identities: new Set<string>(), observed: [] };

  const docs: SourceDoc[] = [];
  const loadProblems: Problem[] = [];
  const cwd = input.cwd ?? process.cwd();
  loadProblems.push(...nestedStackProblems(nested, input.stack, cwd));
  const read: FileDocs[] = [];
  for (const path of files) {
    read.push({ path, ...readManifest(path, cwd) });
    await turn();
  }
  for (const f of new Expander(input.environment ?? defaultEnvironment(input.root, cwd), cwd).expand(read)) {
    for (let i = 0; i < f.docs.length; i++) docs.push(f.docs[i]);
    loadProblems.push(...f.problems);
  }
  await turn();
  const opts = { stack: input.stack, strict: input.strict };
  const validation = new ValidationMemo();
  for (let i = 0; i < docs.length; i++) {
    validation.local(docs[i], opts);
    if (slicer.due()) await slicer.turn();
  }
  const v = validateManifests(docs, opts, validation);
  await turn();
  // Secrets are read even when the manifests have errors: every problem at once, as `validate`
  // reports them (a fix-and-retry loop must not find a missing secret only once the rest is fixed).
  const s = resolveSecrets(v.objects, input.stack, { env: input.env, cwd });
  // Destroy sends no body: a secret it cannot read (a CI job without them) is no reason to stop.
  const problems = sortProblems([...loadProblems, ...v.problems, ...(input.destroy ? [] : s.problems)]);
  if (hasErrors(problems)) return { problems, ...none };
  await turn();
  const desired: DesiredObject[] = [];
  const builder = new DesiredBuilder(s.secrets);
  // Desired objects by identity, as their place in `desired`: what each live object of this stack
  // is compared with, and the identities declared. Objects with no parent are indexed as they are
  // made; a child is found beside its parent (below), and every identity is indexed only when asked.
  const topLevel = new Map<string, number>();
  /** Each desired object's normal form, by its place: compared with its live object's as that is read. */
  const wantForms: Normal[] = [];
  let all: Map<string, number> | undefined;
  const everyIdentity = () => (all ??= new Map(desired.map((d, j) => [d.identity, j])));
  const identities: Identities = { has: (identity) => everyIdentity().has(identity) };
  for (let i = 0; i < v.objects.length; i++) {
    const from = desired.length;
    builder.add(v.objects[i], desired);
    topLevel.set(desired[from].identity, from);
    for (let j = from; j < desired.length; j++) {
      const d = desired[j];
      wantForms.push(memo.normalForm(d.kind, d.body, provisional, config));
    }
    if (slicer.due()) await slicer.turn();
  }
  // What the match phase would look up for each desired object, paired here while each live object
  // is at hand (`DiffOptions.paired`). Identities are unique in a valid stack (validation refuses a
  // name used twice); two objects with no parent under one identity leave it to match.
  const paired: Paired | undefined = topLevel.size === v.objects.length ? { owned: [], settled: [] } : undefined;
  // A child is read right after its parent (`observeItem`), and the manifests list it beside its
  // parent's other children (`DesiredBuilder.add`): it is looked for there first, among a few
  // objects at hand, before in the index of every identity (a look-up far slower at this size).
  let parentAt = -1;
  let parentId: string | undefined;
  const placeOf = (o: ObservedObject, identity: string): number | undefined => {
    if (o.parentId !== undefined && o.parentId === parentId) {
      const p = desired[parentAt].identity;
      for (let j = parentAt + 1; j < desired.length && desired[j].parentIdentity === p; j++) if (desired[j].identity === identity) return j;
    }
    return topLevel.get(identity) ?? everyIdentity().get(identity);
  };
  // Normal forms of what has been read, page by page, until the last page is in; each object of
  // this stack is compared with its manifest object as it comes, so the diff finds most settled.
  for (let i = 0; ;) {
    if (i < ahead.length) {
      const o = ahead[i++];
      memo.freshForm(o.kind, o.body, provisional, config);
      const at = o.owner.type === 'this' && o.marker ? placeOf(o, o.marker.id) : undefined;
      let settled: Settlement | undefined;
      if (at !== undefined) {
        const d = desired[at];
        if (o.kind.embeds) [parentAt, parentId] = [at, o.id];
        if (paired) pairWith(paired, at, o);
        settled = d.kind === o.kind ? memo.settleAhead(d.body, o.body, config, wantForms[at]) : undefined;
        if (settled && paired?.owned[at] === o && sameMetadata(input.stack, d, o)) paired.settled[at] = settled;
      }
      if (!settled) memo.keep(o.body); // the plan compares it, or reads it for something else
      if (slicer.due()) await slicer.turn();
    } else if (liveSettled) break;
    else await Promise.race([nextPage, live.catch(() => {})]);
  }
  await live;
  const observed = manifestKinds().flatMap((k) => observedByKind.get(k) ?? []);
  const plan = how.hints === false
    ? diff(desired, observed, { ...input, target: client.target }, new NormMemo('plan'))
    : diff(desired, observed, { ...input, target: client.target, paired }, memo);
  return { problems, plan, secrets: s.secrets, identities, observed };
}

