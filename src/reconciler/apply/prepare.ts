import { basename, relative } from 'node:path';
import { readFileSync } from 'node:fs';
import type { ApiClient } from '../../client/api-client.js';
import { manifestFiles, parseSource, type SourceDoc } from '../manifests/load.js';
import { hasErrors, sortProblems, type Problem } from '../manifests/problems.js';
import { resolveSecrets, type ResolvedSecret } from '../manifests/secrets.js';
import { validateManifests, ValidationMemo } from '../manifests/validate.js';
import type { PlanInput } from '../pipeline.js';
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
 * Gives the event loop a turn once `sliceMs` of work has passed since the last one. Planning
 * requests the list pages first and then parses and validates while they arrive: without turns,
 * each next page would only be asked for once all of that work was done.
 */
function timeSlicer(sliceMs = 8): () => Promise<void> {
  let last = performance.now();
  return async () => {
    if (performance.now() - last < sliceMs) return;
    await new Promise((r) => setImmediate(r));
    last = performance.now();
  };
}

/**
 * `plan` and the plan step of `apply DIR`: reads the live state while it loads, validates and
 * resolves the manifests, then diffs. Keeps the secret values it read so apply sends exactly
 * what was fingerprinted, without reading sources twice. With `closeAfterRead` (plan, which needs
 * the client for nothing else) the client is closed as soon as the pages are in.
 */
export async function preparePlan(input: PlanInput, client: ApiClient, how: { closeAfterRead?: boolean } = {}): Promise<Prepared> {
  // The list pages are requested first: waiting for them overlaps parsing and validating.
  const live = how.closeAfterRead ? readLiveState(client).finally(() => client.close()) : readLiveState(client);
  live.catch(() => {}); // invalid manifests return before awaiting it; its failure is not theirs
  const turn = timeSlicer();
  const identities = new Set<string>();
  const none = { secrets: new Map(), identities, observed: [] };

  const docs: SourceDoc[] = [];
  const loadProblems: Problem[] = [];
  const cwd = input.cwd ?? process.cwd();
  for (const path of manifestFiles(input.root)) {
    const parsed = parseSource(relative(cwd, path) || basename(path), readFileSync(path, 'utf8'));
    docs.push(...parsed.docs);
    loadProblems.push(...parsed.problems);
    await turn();
  }
  const opts = { stack: input.stack, strict: input.strict };
  const memo = new ValidationMemo();
  for (const doc of docs) {
    memo.local(doc, opts);
    await turn();
  }
  const v = validateManifests(docs, opts, memo);
  const vProblems = sortProblems([...loadProblems, ...v.problems]);
  if (hasErrors(vProblems)) return { problems: vProblems, ...none };
  await turn();
  const s = resolveSecrets(v.objects, input.stack, { env: input.env, cwd });
  const problems = sortProblems([...vProblems, ...s.problems]);
  if (hasErrors(problems)) return { problems, ...none };
  await turn();
  const desired = buildDesired(v.objects, s.secrets);
  for (const d of desired) identities.add(d.identity);
  const lists = await live;
  const observed = observeLists(lists, input.stack);
  const plan = diff(desired, observed, { ...input, target: client.target });
  return { problems, plan, secrets: s.secrets, identities, observed };
}
