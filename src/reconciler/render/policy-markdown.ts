import type { Plan } from '../plan/types.js';
import { outcomeWord, overrideHint, policySummary, resultSubject, resultText } from './policy.js';

/** The policies' section at the top of the comment: the verdict, each policy that denies or warns (denials first), then the first failures. */
export function policyMarkdown(plan: Plan, maxResults: number, esc: { code: (s: string) => string; text: (s: string) => string }): string[] {
  const p = plan.policy;
  if (!p) return [];
  const denies = p.outcomes.some((o) => o.denied && !o.override);
  const out = [`#### ${denies ? '⛔ ' : ''}${esc.text(policySummary(plan)!)}`, ''];
  if (!p.outcomes.length) return out;
  if (denies) out.push('> [!CAUTION]', '> A policy denies this plan: `apply` refuses it.', '');
  out.push('| policy | verdict |', '|---|---|');
  for (const o of p.outcomes) {
    const icon = o.denied ? (o.override ? '⏭️' : '⛔') : '⚠️';
    const hint = o.denied && !o.override ? `<br>${o.overridable ? esc.code(`--override-policy ${o.policy} --reason TEXT`) : esc.text(overrideHint(o))}` : '';
    out.push(`| ${icon} ${esc.code(o.policy)} | ${esc.text(outcomeWord(o))}${hint} |`);
  }
  out.push('');
  const shown = p.results.slice(0, maxResults);
  for (const r of shown) {
    const icon = r.severity === 'deny' ? (r.overridden ? '⏭️' : '⛔') : '⚠️';
    out.push(`- ${icon} ${esc.code(r.policy)}: ${r.identity ? `${esc.code(r.identity)} (${r.action})` : esc.text(resultSubject(r))}: ${esc.text(resultText(r))}`);
  }
  const more = p.results.length - shown.length + (p.omitted ?? 0);
  if (more) out.push(`- … and ${more.toLocaleString('en-US')} more (\`edgeplane plan\` lists them)`);
  if (shown.length || more) out.push('');
  return out;
}
