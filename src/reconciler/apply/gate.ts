import type { Plan } from '../plan/types.js';
import { blockLine, protectedLine } from '../render/values.js';
import { denyingPolicies } from '../policy/evaluate.js';
import { overrideHint } from '../render/policy.js';

/** Why a plan may not be applied as it is: `conflicts` stop everything; the others can be overridden. */
export interface GateRefusal { reason: 'conflicts' | 'policy' | 'protected' | 'threshold'; message: string }

/**
 * The gates every apply passes (the CLI's `apply` and `destroy`, the agent): conflicts with objects
 * the stack does not own stop it; a policy that denies stops it unless overridden (the plan
 * carries its overrides: `--override-policy`); protected objects stop it unless allowed; the safety
 * threshold stops it unless forced. The warnings say what an override let through.
 */
export function gatePlan(plan: Plan, opts: { force?: boolean; allowProtectedChanges?: boolean }): { refusal?: GateRefusal; warnings: string[] } {
  const warnings: string[] = [];
  if (plan.conflicts.length) {
    return { refusal: { reason: 'conflicts', message: `apply: ${plan.conflicts.length} conflict${plan.conflicts.length > 1 ? 's' : ''} with objects this stack does not own; nothing applied` }, warnings };
  }
  const denying = denyingPolicies(plan.policy);
  if (denying.length) {
    return { refusal: { reason: 'policy', message: `apply blocked by ${denying.length === 1 ? 'a policy' : `${denying.length} policies`}: ${denying.map((o) => `${o.policy} (${o.denied} denied; ${overrideHint(o)})`).join(', ')}` }, warnings };
  }
  for (const o of plan.policy?.outcomes ?? []) if (o.denied && o.override) warnings.push(`warning: policy ${o.policy} denies ${o.denied} time${o.denied === 1 ? '' : 's'}; going ahead because of --override-policy (reason: ${o.override.reason})`);
  const prot = plan.protectedChanges ?? [];
  if (prot.length && !opts.allowProtectedChanges) {
    return { refusal: { reason: 'protected', message: `apply blocked by protected objects: ${prot.map(protectedLine).join(', ')}; review the plan and pass --allow-protected-changes to go ahead` }, warnings };
  }
  if (prot.length) warnings.push(`warning: protected objects: ${prot.map(protectedLine).join(', ')}; going ahead because of --allow-protected-changes`);
  if (plan.blocked.length && !opts.force) {
    return { refusal: { reason: 'threshold', message: `apply blocked by the safety threshold (${plan.blocked.map(blockLine).join(', ')}); review the plan and pass --force to go ahead` }, warnings };
  }
  if (plan.blocked.length) warnings.push('warning: safety threshold exceeded; going ahead because of --force');
  return { warnings };
}
