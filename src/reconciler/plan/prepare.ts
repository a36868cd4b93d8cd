import type { ApiClient } from '../../client/api-client.js';
import { manifestFiles, readManifest, type SourceDoc } from '../manifests/load.js';
import { defaultEnvironment, Expander, type Environment, type FileDocs } from '../manifests/environments.js';
import type { ManifestObject } from '../manifests/model.js';
import { nestedStackProblems } from '../manifests/config.js';
import { hasErrors, sortProblems, type Problem } from '../manifests/problems.js';
import { keyFingerprints, resolveSecrets, type ResolvedSecret } from '../manifests/secrets.js';
import { validateManifests, ValidationMemo } from '../manifests/validate.js';
import { DesiredBuilder } from './desired.js';
import { diff, type DiffOptions } from './diff.js';
import { observeItem } from './observed.js';
import { DEFAULT_CONFIG, NormMemo } from './normalize.js';
import { PlanHints } from './hints.js';
import { manifestKinds } from '../manifests/schema.js';
import type { KindDef } from '../../kinds/types.js';
import type { DesiredObject, ObservedObject, Identities } from './state.js';
import type { Plan } from './types.js';
import { streamLiveState } from '../state/read-state.js';
import { loadStackPolicies, strayPolicies, type LoadedPolicies } from '../policy/load.js';
import { checkPlan } from '../policy/evaluate.js';
import { checkManifests } from '../policy/manifests.js';
import type { PolicyOverride } from '../policy/types.js';

export interface ValidateInput {
  root: string; stack: string; strict?: boolean; cwd?: string;
  /** `validate`: the stack's policies too (their problems, and the rules that read only the object). */
  checkPolicies?: boolean;
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
  const problems = [...nested, ...loaded.problems, ...v.problems];
  if (input.checkPolicies) {
    // The stack's policies: their own problems, and what the rules that read only the object find.
    const policies = loadStackPolicies(input.root, input.cwd);
    problems.push(...policies.problems, ...strayPolicies(loaded.docs, policies.set, input.cwd), ...checkManifests(policies.set, v.objects));
  }
  return { problems: sortProblems(problems), objects: v.objects, files: loaded.files };
}

export interface PlanInput extends ValidateInput, Omit<DiffOptions, 'target' | 'stack'> {
  /** Where `{env: NAME}` secrets are read from. */
  env: Record<string, string | undefined>;
  /** The policies checked on the plan (and their problems); absent: those `policies:` of the stack's edgeplane.yaml names. */
  policies?: LoadedPolicies;
  /** `--override-policy NAME --reason TEXT`: the named policies' denials let through (checked by the caller: `checkOverrides`). */
  policyOverrides?: PolicyOverride[];
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
  /** The desired objects it was made from (absent when the manifests have errors). */
  desired?: DesiredObject[];
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
 * and the planner's hints (`hints.ts`: normal forms ahead, live objects paired with their manifest
 * objects and found settled) work on each page as it comes. What is left once the last page is in
 * is matching and comparing. Keeps the secret values it read so apply sends exactly what was
 * fingerprinted, without reading sources twice. With `closeAfterRead` (plan, which needs the
 * client for nothing else) the client is closed as soon as the pages are in: the embedded
 * database's memory is given back before the diff.
 */
export async function preparePlan(input: PlanInput, client: ApiClient, how: PrepareOptions = {}): Promise<Prepared> {
  const config = input.config ?? DEFAULT_CONFIG;
  // Listed before anything is read from the service: a directory that is not there reads nothing.
  const nested: string[] = [];
  const files = manifestFiles(input.root, nested);
  const hints = how.hints === false ? undefined : new PlanHints(input.stack, config);
  const observedByKind = new Map<KindDef, ObservedObject[]>();
  let pageArrived = () => {};
  let nextPage = new Promise<void>((r) => (pageArrived = r));
  const live = streamLiveState(client, (kind, items, etags) => {
    let list = observedByKind.get(kind);
    if (!list) observedByKind.set(kind, (list = []));
    const from = list.length;
    for (let i = 0; i < items.length; i++) observeItem(kind, items[i], input.stack, list, etags);
    if (hints) for (let i = from; i < list.length; i++) hints.read(list[i]);
    pageArrived();
    nextPage = new Promise<void>((r) => (pageArrived = r));
  });
  // The secrets' fingerprints are asked of the service too: the client is closed after both.
  let fingerprinted = () => {};
  const fingerprints = new Promise<void>((r) => (fingerprinted = r));
  if (how.closeAfterRead) void Promise.allSettled([live, fingerprints]).then(() => client.close()).catch(() => {});
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
  const policies = input.policies ?? loadStackPolicies(input.root, cwd);
  loadProblems.push(...policies.problems, ...strayPolicies(docs, policies.set, cwd));
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
  try {
    if (!hasErrors(s.problems)) await keyFingerprints(s.secrets, input.stack, (stack, asks) => client.fingerprintSecrets(stack, asks));
  } finally {
    fingerprinted();
  }
  // Destroy sends no body: a secret it cannot read (a CI job without them) is no reason to stop.
  const problems = sortProblems([...loadProblems, ...v.problems, ...(input.destroy ? [] : s.problems)]);
  if (hasErrors(problems)) return { problems, ...none };
  await turn();
  const desired: DesiredObject[] = [];
  const builder = new DesiredBuilder(s.secrets);
  for (let i = 0; i < v.objects.length; i++) {
    const from = desired.length;
    builder.add(v.objects[i], desired);
    hints?.desire(desired, from);
    if (slicer.due()) await slicer.turn();
  }
  let all: Map<string, number> | undefined;
  const identities: Identities = { has: (identity) => (all ??= new Map(desired.map((d, j) => [d.identity, j]))).has(identity) };
  // The hints work on what has been read, page by page, until the last page is in.
  for (;;) {
    if (hints?.observeNext()) { if (slicer.due()) await slicer.turn(); }
    else if (liveSettled) break;
    else await Promise.race([nextPage, live.catch(() => {})]);
  }
  await live;
  const observed = manifestKinds().flatMap((k) => observedByKind.get(k) ?? []);
  const plan = diff(desired, observed, { ...input, target: client.target, paired: hints?.paired }, hints?.memo ?? new NormMemo('plan'));
  if (policies.set.policies.length) checkPolicies(policies.set, { plan, desired, observed, overrides: input.policyOverrides });
  return { problems, plan, secrets: s.secrets, identities, observed, desired };
}

/**
 * Sets `plan.policy`. A function of its own, so that the store is not part of `preparePlan`'s
 * optimized code: made during plans without policies, that code was thrown away at it.
 */
function checkPolicies(set: LoadedPolicies['set'], input: Parameters<typeof checkPlan>[1]): void {
  input.plan.policy = checkPlan(set, input);
}
