import type { Plan, Step } from '../plan/types.js';
import type { PolicyOutcome, PolicyResult } from '../policy/types.js';

/** Results a text plan lists (the JSON plan has up to 1,000; the counts are complete). */
const TEXT_RESULTS = 50;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** `1 policy denies, 2 warn (10 checked)`: the plan's policy verdict in a line. */
export function policySummary(plan: Plan): string | undefined {
  const p = plan.policy;
  if (!p) return undefined;
  const denied = p.outcomes.filter((o) => o.denied && !o.override).length;
  const overridden = p.outcomes.filter((o) => o.denied && o.override).length;
  const warned = p.outcomes.filter((o) => !o.denied && o.warned).length;
  const parts = [
    denied ? `${plural(denied, 'policy', 'policies')} ${denied === 1 ? 'denies' : 'deny'}` : '',
    overridden ? `${overridden} overridden` : '',
    warned ? `${plural(warned, 'policy', 'policies')} ${warned === 1 ? 'warns' : 'warn'}` : '',
  ].filter(Boolean);
  return `Policies: ${parts.length ? parts.join(', ') : 'all pass'} (${p.checked.length} checked)`;
}

/** What a result is about: the object and what the plan does to it, or the plan. */
export function resultSubject(r: PolicyResult): string {
  return r.identity ? `${r.identity} (${r.action})` : 'the plan';
}

/** A result's text: the rule's message, and why it could not be evaluated when it could not. */
export function resultText(r: Pick<PolicyResult, 'message' | 'error'>): string {
  return r.error ? `${r.message} (the rule could not be evaluated: ${r.error})` : r.message;
}

/** How a policy's outcome reads: denied, overridden (and why), or a warning. */
export function outcomeWord(o: PolicyOutcome): string {
  if (o.denied && o.override) return `denied ${plural(o.denied, 'time')}, overridden: ${o.override.reason}`;
  if (o.denied) return `denies (${plural(o.denied, 'object')}${o.warned ? `, ${o.warned} warned` : ''})`;
  return `warns (${plural(o.warned, 'object')})`;
}

/** The command line that lets a denying policy through, or why nothing does. */
export function overrideHint(o: PolicyOutcome): string {
  return o.overridable ? `apply needs --override-policy ${o.policy} --reason TEXT` : 'it cannot be overridden: change the manifests';
}

/** The text plan's lines under a step: its object's failed rules. */
export function stepPolicyLines(step: Step): string[] {
  return (step.policy ?? []).map((r) => `    ! policy ${r.policy} ${r.overridden ? 'denies (overridden)' : r.severity === 'deny' ? 'denies' : 'warns'}: ${resultText(r)}`);
}

/** The text plan's policy block: each policy with a failure, then the failures (denials first). */
export function policyBlock(plan: Plan): { tone: 'deny' | 'warn' | 'ok'; line: string }[] {
  const p = plan.policy;
  if (!p) return [];
  const out: { tone: 'deny' | 'warn' | 'ok'; line: string }[] = [];
  for (const o of p.outcomes) {
    const tone = o.denied && !o.override ? 'deny' : 'warn';
    out.push({ tone, line: `policy ${o.policy} ${outcomeWord(o)}${tone === 'deny' ? `; ${overrideHint(o)}` : ''}` });
  }
  for (const r of p.results.slice(0, TEXT_RESULTS)) {
    out.push({ tone: r.severity === 'deny' && !r.overridden ? 'deny' : 'warn', line: `  ${r.severity === 'deny' ? (r.overridden ? 'denied (overridden)' : 'denied') : 'warning'}: ${r.policy}: ${resultSubject(r)}: ${resultText(r)}` });
  }
  const more = p.results.length - Math.min(TEXT_RESULTS, p.results.length) + (p.omitted ?? 0);
  if (more) out.push({ tone: 'warn', line: `  … and ${more} more (the JSON plan lists up to 1,000)` });
  out.push({ tone: 'ok', line: policySummary(plan)! });
  return out;
}
