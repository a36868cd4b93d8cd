import type { ApiClient } from '../../client/api-client.js';
import { hasErrors, sortProblems, type Problem } from '../manifests/problems.js';
import { resolveSecrets, type ResolvedSecret } from '../manifests/secrets.js';
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
export async function preparePlan(input: PlanInput, client: ApiClient): Promise<Prepared> {
  const v = validateDir(input);
  const identities = new Set<string>();
  if (hasErrors(v.problems)) return { problems: v.problems, secrets: new Map(), identities, observed: [] };
  const s = resolveSecrets(v.objects, input.stack, { env: input.env, cwd: input.cwd ?? process.cwd() });
  const problems = sortProblems([...v.problems, ...s.problems]);
  if (hasErrors(problems)) return { problems, secrets: new Map(), identities, observed: [] };
  const desired = buildDesired(v.objects, s.secrets);
  for (const d of desired) identities.add(d.identity);
  const lists = await readLiveState(client);
  const observed = observeLists(lists, input.stack);
  const plan = diff(desired, observed, { ...input, target: client.target });
  return { problems, plan, secrets: s.secrets, identities, observed };
}
