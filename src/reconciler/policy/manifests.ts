import type { ManifestObject } from '../manifests/model.js';
import type { Problem } from '../manifests/problems.js';
import { buildDesired } from '../plan/desired.js';
import { emptyCounts, failedRules, objectView, type Activation } from './evaluate.js';
import type { Policy, PolicySet } from './types.js';

/**
 * What `validate` checks of the policies: the rules that read only `object` (their policy's
 * condition too), on each valid object of the manifests, as the plan would show it (references by
 * identity, secrets masked). No live state and no plan: the rules that read them wait for `plan`.
 * A denial is an error, a warning a warning, at the object.
 */
export function checkManifests(set: PolicySet, objects: readonly ManifestObject[]): Problem[] {
  const policies = set.policies
    .filter((p) => !p.planLevel && (!p.condition || p.condition.objectOnly))
    .map((p) => ({ ...p, rules: p.rules.filter((r) => r.compiled.objectOnly) }) as Policy)
    .filter((p) => p.rules.length);
  if (!policies.length) return [];
  const desired = buildDesired(objects.filter((o) => o.valid), new Map());
  const ctx: Activation = { object: {}, live: null, action: 'none', changes: [], plan: emptyCounts() };
  const out: Problem[] = [];
  for (const d of desired) {
    const mk = d.kind.manifestKind!;
    let viewed = false;
    for (const p of policies) {
      if ((p.kinds && !p.kinds.has(mk)) || (p.selectors && !p.selectors.some((s) => s.matches(d.identity)))) continue;
      if (!viewed) {
        ctx.object = objectView(d.kind, d.name, d.identity, d.body);
        viewed = true;
      }
      for (const f of failedRules(p, ctx)) {
        out.push({
          ...d.source!, severity: f.rule.severity === 'deny' ? 'error' : 'warning', path: '', rule: 'policy',
          message: `${d.identity}: policy ${p.name}: ${f.rule.message}${f.error ? ` (the rule could not be evaluated: ${f.error})` : ''}`,
        });
      }
    }
  }
  return out;
}
