import type { ApiClient } from '../client/api-client.js';
import { preparePlan } from './apply/prepare.js';
import { nestedStackProblems } from './manifests/config.js';
import { loadManifests } from './manifests/load.js';
import type { ManifestObject } from './manifests/model.js';
import { hasErrors, sortProblems, type Problem } from './manifests/problems.js';
import { resolveSecrets } from './manifests/secrets.js';
import { validateManifests } from './manifests/validate.js';
import { buildDesired } from './plan/desired.js';
import { diff, type DiffOptions } from './plan/diff.js';
import { observeLists, type ObservedLists } from './plan/observed.js';
import type { Plan } from './plan/types.js';

export interface ValidateInput { root: string; stack: string; strict?: boolean; cwd?: string }

export interface ValidateResult { problems: Problem[]; objects: ManifestObject[]; files: string[] }

/** Load and validate a manifest directory: every problem, nothing thrown for bad input. */
export function validateDir(input: ValidateInput): ValidateResult {
  const loaded = loadManifests(input.root, input.cwd);
  const v = validateManifests(loaded.docs, { stack: input.stack, strict: input.strict });
  const nested = nestedStackProblems(loaded.nested, input.stack, input.cwd ?? process.cwd());
  return { problems: sortProblems([...nested, ...loaded.problems, ...v.problems]), objects: v.objects, files: loaded.files };
}

export interface PlanInput extends ValidateInput, Omit<DiffOptions, 'target' | 'stack'> {
  /** Where `{env: NAME}` secrets are read from. */
  env: Record<string, string | undefined>;
}

export interface PlanResult { problems: Problem[]; plan?: Plan }

/** Validated manifests + live state → a plan. Problems (invalid manifests, missing secrets) stop before reading. */
export function planFromState(input: PlanInput, lists: ObservedLists, target: string): PlanResult {
  return planDocs(validateDir(input), input, lists, target);
}

/** The same, from already validated documents (tests and `watch` keep them in memory). */
export function planDocs(v: { problems: Problem[]; objects: ManifestObject[] }, input: Omit<PlanInput, 'root'>, lists: ObservedLists, target: string): PlanResult {
  // Secrets are read even when the manifests have errors: every problem at once, as `validate` reports them.
  const s = resolveSecrets(v.objects, input.stack, { env: input.env, cwd: input.cwd ?? process.cwd() });
  const problems = sortProblems([...v.problems, ...(input.destroy ? [] : s.problems)]); // destroy sends no body
  if (hasErrors(problems)) return { problems };
  const desired = buildDesired(v.objects, s.secrets);
  const observed = observeLists(lists, input.stack);
  const plan = diff(desired, observed, { ...input, target });
  return { problems, plan };
}

/**
 * `preparePlan` without what apply keeps. With `closeAfterRead` the client is closed as soon as the
 * list pages are in: the embedded engine's memory can go before the diff is computed.
 */
export async function planWithClient(input: PlanInput, client: ApiClient, opts: { closeAfterRead?: boolean } = {}): Promise<PlanResult> {
  const { problems, plan } = await preparePlan(input, client, opts);
  return plan ? { problems, plan } : { problems };
}
