import type { ApiClient } from '../../client/api-client.js';
import { hasErrors, sortProblems, type Problem } from '../manifests/problems.js';
import { resolveSecrets, type ResolvedSecret } from '../manifests/secrets.js';
import type { Loaded } from '../manifests/load.js';
import { validateManifests } from '../manifests/validate.js';
import { validateDir, type PlanInput } from '../pipeline.js';
import { buildDesired } from '../plan/desired.js';
import { diff } from '../plan/diff.js';
import { observeLists } from '../plan/observed.js';
import type { ObservedObject } from '../plan/state.js';
import type { Plan } from '../plan/types.js';
import { readLiveState } from '../state/read-state.js';

export interface Prepared {
  problems: Problem[];
  plan?: Plan;
  /** Secret values read while planning, by `<identity>#<path>`: apply sends them, nothing else sees them. */
  secrets: Map<string, ResolvedSecret>;
  /** Identities the manifests declare: watch tells a prune (identity gone) from other deletes. */
  identities: Set<string>;
  /** The live objects the plan was made from. */
  observed: ObservedObject[];
}

/**
 * The plan step of `apply DIR` and `watch`: like `plan`, but keeps the secret values it read so
 * apply sends exactly what was fingerprinted, without reading sources twice.
 */
export async function preparePlan(input: PlanInput, client: ApiClient, opts: { load?: (root: string) => Loaded } = {}): Promise<Prepared> {
  // The list pages are requested first: waiting for them overlaps parsing and validating.
  const live = readLiveState(client);
  live.catch(() => {}); // invalid manifests return before awaiting it; its failure is not theirs
  const v = opts.load ? validateLoaded(opts.load(input.root), input) : validateDir(input);
  const identities = new Set<string>();
  if (hasErrors(v.problems)) return { problems: v.problems, secrets: new Map(), identities, observed: [] };
  const s = resolveSecrets(v.objects, input.stack, { env: input.env, cwd: input.cwd ?? process.cwd() });
  const problems = sortProblems([...v.problems, ...s.problems]);
  if (hasErrors(problems)) return { problems, secrets: new Map(), identities, observed: [] };
  const desired = buildDesired(v.objects, s.secrets);
  for (const d of desired) identities.add(d.identity);
  const lists = await live;
  const observed = observeLists(lists, input.stack);
  const plan = diff(desired, observed, { ...input, target: client.target });
  return { problems, plan, secrets: s.secrets, identities, observed };
}

/** `validateDir` over documents already loaded (watch keeps parsed files between runs). */
function validateLoaded(loaded: Loaded, input: PlanInput) {
  const v = validateManifests(loaded.docs, { stack: input.stack, strict: input.strict });
  return { problems: sortProblems([...loaded.problems, ...v.problems]), objects: v.objects, files: loaded.files };
}
