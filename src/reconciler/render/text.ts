import { createColors } from 'picocolors';
import type { Plan, Step } from '../plan/types.js';
import { policyBlock, stepPolicyLines } from './policy.js';
import { changeRisk, groupChanges, groupLine, groupTitle, riskOrder } from './risk.js';
import { ascii, blockLine, driftLine, driftObjects, lineCount, lineDiff, listChange, multiLine, protectedLine, scopeLines, short, shortPair, summaryLine, SYMBOL, visible, waitingLine } from './values.js';

type Colors = ReturnType<typeof createColors>;

export interface TextOptions {
  /** Colour output; the CLI turns it on only for a TTY without NO_COLOR. */
  color?: boolean;
}

function paint(c: Colors, step: Step, s: string): string {
  if (step.action === 'create') return c.green(s);
  if (step.action === 'delete' || step.action === 'module.delete') return c.red(s);
  if (step.action === 'replace') return c.magenta(s);
  return c.yellow(s);
}

function heading(step: Step): string {
  const what = step.module ? `${step.object.identity} ${step.module}` : step.object.identity;
  const id = step.object.id ? ` (${step.object.id})` : '';
  return `${SYMBOL[step.action]} ${step.action} ${what}${id}`;
}

/** Names, at most `max` of them, the others counted. */
function names(list: string[], max: number): string {
  return list.length > max ? `${list.slice(0, max).join(', ')} and ${list.length - max} more` : list.join(', ');
}

/**
 * The plan's objects by risk, as the pull-request comment orders them (`riskOrder`): destructive,
 * then traffic or security changes (with the fields or modules that make them so), creates, other
 * updates (objects making the same change as one entry). A few names each, the rest counted.
 */
function riskSummary(plan: Plan): string[] {
  const r = riskOrder(plan);
  const out = ['By risk:'];
  const destructive = [...new Set(r.destructive.map((s) => s.object.identity))];
  if (destructive.length) out.push(`  ${destructive.length} destructive (delete, replace or module removal): ${names(destructive, 5)}`);
  if (r.risky.length) {
    const why = (steps: Step[]) => [...new Set(steps.flatMap((s) => [...(s.module && changeRisk(s.object.kind, s.module) ? [s.module] : []), ...s.changes.filter((c) => changeRisk(s.object.kind, c.path)).map((c) => c.path.split('.')[0])]))].join(', ');
    out.push(`  ${r.risky.length} traffic or security change${r.risky.length === 1 ? '' : 's'}: ${names(r.risky.map((x) => `${x[0].object.identity} (${why(x)})`), 5)}`);
  }
  if (r.creates.length) out.push(`  ${r.creates.length} created: ${names(r.creates.map((x) => x[0].object.identity), 10)}`);
  if (r.other.length) {
    const groups = groupChanges(r.other).sort((a, b) => b.objects.length - a.objects.length);
    const shown = groups.slice(0, 3).map((g) => `${g.objects.length > 1 ? groupTitle(g) : g.objects[0][0].object.identity}: ${groupLine(g)}`);
    const rest = groups.slice(3).reduce((k, g) => k + g.objects.length, 0);
    out.push(`  ${r.other.length} other update${r.other.length === 1 ? '' : 's'}: ${shown.join('; ')}${rest ? `; and ${rest} more object${rest === 1 ? '' : 's'}` : ''}`);
  }
  return out;
}

const items = (n: number) => `${n} item${n === 1 ? '' : 's'}`;

/** The plan for a terminal: one block per step, then warnings, conflicts and the summary line. */
export function renderText(plan: Plan, opts: TextOptions = {}): string {
  const c = createColors(!!opts.color);
  const out: string[] = [`edgeplane plan: stack ${c.bold(plan.stack)}${plan.environment !== undefined ? ` (environment ${c.bold(plan.environment)})` : ''} on ${plan.target}`, ''];
  const scope = scopeLines(plan);
  if (scope.length) out.push(...scope.map((l) => c.bold(c.magenta(l))), '');
  const drift = driftObjects(plan);
  if (drift.length) {
    // As Terraform's "Objects have changed outside of Terraform": before the steps, a few named.
    out.push(c.yellow(`${driftLine(drift.length)}:`));
    for (const d of drift.slice(0, 10)) out.push(c.yellow(`  ${d.identity}: ${d.fields.slice(0, 5).join(', ')}${d.fields.length > 5 ? ` and ${d.fields.length - 5} more` : ''}`));
    if (drift.length > 10) out.push(c.yellow(`  … and ${drift.length - 10} more (each change marked (drift) below)`));
    out.push('');
  }
  for (const step of plan.steps) {
    out.push(paint(c, step, heading(step)));
    if (step.reason) out.push(c.dim(`    # ${step.reason}`));
    // What the service deletes with it: each one named (no request of its own).
    for (const x of step.cascade ?? []) out.push(c.red(`    - with it: ${x.identity} (${x.id})`));
    for (const ch of step.changes) {
      const drifted = ch.drift ? c.yellow(' (drift)') : '';
      const list = ch.sensitive ? undefined : listChange(ch.before, ch.after);
      if (list) {
        // A long list, element by element: what left and what came (each in full, up to 100 characters).
        // When the order changed (it matters: failover children are tried in order), the whole new order.
        const after = ch.after as unknown[];
        out.push(`    ~ ${ch.path}: ${items((ch.before as unknown[]).length)} → ${items(after.length)}${list.reordered ? ', in this order:' : ''}${drifted}`);
        const shown = (v: unknown) => (list.alike.has(v) ? ascii(short(v, 100)) : short(v, 100));
        for (const v of list.removed) out.push(`        - ${shown(v)}`);
        if (list.reordered) after.forEach((v, i) => out.push(`        ${list.added.includes(v) ? '+' : ' '} ${i + 1}. ${shown(v)}`));
        else for (const v of list.added) out.push(`        + ${shown(v)}`);
        continue;
      }
      if (!ch.sensitive && multiLine(ch.before, ch.after)) {
        // Text of several lines: every line that changed, whole, where it is.
        out.push(`    ~ ${ch.path}: ${lineCount(ch.before)} → ${lineCount(ch.after as string)}, the lines that changed:${drifted}`);
        for (const d of lineDiff(ch.before, ch.after as string)) out.push(d.sign === '@' ? c.dim(`        @@ ${d.text}`) : `        ${d.sign} ${d.alike ? ascii(visible(d.text)) : visible(d.text)}`);
        continue;
      }
      const mark = ch.before === undefined ? '+' : ch.after === undefined ? '-' : '~';
      const value = ch.before === undefined ? short(ch.after) : ch.after === undefined ? short(ch.before) : shortPair(ch.before, ch.after, 60).join(' → ');
      out.push(`    ${mark} ${ch.path}: ${ch.sensitive && ch.before !== undefined && ch.after !== undefined ? '(sensitive value changed)' : value}${drifted}`);
    }
    out.push(c.dim(`    ${step.request.method} ${step.request.path}`));
    for (const l of stepPolicyLines(step)) out.push(step.policy!.some((r) => r.severity === 'deny' && !r.overridden) ? c.red(l) : c.yellow(l));
  }
  if (plan.steps.length) out.push('');
  for (const w of plan.warnings) out.push(c.yellow(`warning: ${w}`));
  for (const k of plan.conflicts) {
    out.push(c.red(`conflict: ${k.message}`));
    if (k.adopt) out.push(`  adopt it with: ${k.adopt}`);
  }
  for (const b of plan.blocked) {
    out.push(c.red(`blocked: ${blockLine(b)} (${b.deletes} deleted or replaced, ${b.updates} updated); apply needs --force`));
  }
  for (const p of plan.protectedChanges ?? []) out.push(c.red(`protected: ${protectedLine(p)}; apply needs --allow-protected-changes`));
  if (plan.warnings.length || plan.conflicts.length || plan.blocked.length || plan.protectedChanges?.length) out.push('');
  // The policies' verdict: each policy that denies or warns, its failures, and the count checked.
  const policy = policyBlock(plan);
  for (const l of policy) out.push(l.tone === 'deny' ? c.red(l.line) : l.tone === 'warn' ? c.yellow(l.line) : l.line);
  if (policy.length) out.push('');
  if (plan.steps.length) out.push(...riskSummary(plan), '');
  out.push(plan.steps.length ? c.bold(summaryLine(plan) + (plan.partial ? ' (partial)' : '')) : plan.conflicts.length ? 'No changes planned until the conflicts above are resolved.' : plan.destroy ? 'Nothing to destroy: the stack owns no object that can be deleted.' : plan.partial?.waiting ? waitingLine(plan.partial.waiting, 'see the warnings above') : plan.partial ? 'No changes among the targets.' : 'No changes. The live state matches the manifests.');
  return out.join('\n') + '\n';
}
