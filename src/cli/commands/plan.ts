import { writeFileSync } from 'node:fs';
import { displayPath } from '../../util/display-path.js';
import { resolveStack, stackSafety, stackTarget } from '../../reconciler/manifests/config.js';
import { filesToPlan } from '../../reconciler/manifests/load.js';
import { formatProblem, hasErrors } from '../../reconciler/manifests/problems.js';
import { preparePlan, type PlanInput } from '../../reconciler/plan/prepare.js';
import { UnknownSelectorError } from '../../reconciler/plan/selectors.js';
import { hasChanges } from '../../reconciler/plan/types.js';
import { renderJson } from '../../reconciler/render/json.js';
import { MARKDOWN_LIMIT, problemsMarkdown, renderMarkdown } from '../../reconciler/render/markdown.js';
import { renderText } from '../../reconciler/render/text.js';
import { CliExit, EXIT } from '../exit.js';
import { reconcilerConfig } from '../service-config.js';
import { info, useColor, type Output } from '../output.js';
import { openTarget, targetArgs, targetArgv, type TargetFlags } from '../target.js';
import { shellWord } from '../shell.js';
import { loadStackPolicies, type LoadedPolicies } from '../../reconciler/policy/load.js';
import { denyingPolicies, overrideProblems } from '../../reconciler/policy/evaluate.js';
import type { PolicyOverride } from '../../reconciler/policy/types.js';

export interface PlanFlags extends TargetFlags {
  stack?: string;
  out?: string;
  json?: boolean;
  markdown?: boolean;
  /** Characters the --markdown comment may take (a whole number as typed). */
  markdownLimit?: string;
  /** Also write the whole plan as Markdown, nothing left out, to this file. */
  outMarkdown?: string;
  detailedExitcode?: boolean;
  adopt?: boolean;
  strict?: boolean;
  target?: string[];
  destroy?: boolean;
  allowProtectedChanges?: boolean;
  overridePolicy?: string[];
  reason?: string;
}

/**
 * The stack's policies, and `--override-policy NAME --reason TEXT` checked against them: a name
 * that is no policy (did-you-mean), one that cannot be overridden, or an override without its
 * reason is refused before anything is planned.
 */
export function policyInput(dir: string, flags: { overridePolicy?: string[]; reason?: string }): { policies: LoadedPolicies; policyOverrides: PolicyOverride[] } {
  const policies = loadStackPolicies(dir);
  return { policies, policyOverrides: overridesOf(flags, policies.set.policies) };
}

/** The overrides the flags name, checked against these policies. */
export function overridesOf(flags: { overridePolicy?: string[]; reason?: string }, policies: readonly { name: string; overridable: boolean }[]): PolicyOverride[] {
  const names = [...new Set(flags.overridePolicy ?? [])];
  if (flags.reason !== undefined && !names.length) throw new CliExit(EXIT.error, '--reason goes with --override-policy NAME: it says why that policy is let through');
  if (!names.length) return [];
  const reason = flags.reason?.trim();
  if (!reason) throw new CliExit(EXIT.error, `--override-policy ${names.join(', ')} needs --reason TEXT: why the policy is let through (the plan and the sync record keep it)`);
  if (reason.length > 500) throw new CliExit(EXIT.error, `--reason is ${reason.length} characters; at most 500`);
  const problems = overrideProblems(names, policies);
  if (problems.length) throw new CliExit(EXIT.error, problems.map((p) => `error: ${p}`).join('\n'));
  return names.map((policy) => ({ policy, reason }));
}

/** What `plan` and `apply` take from the stack file's `safety:` and their flags, for the planner. */
export function scopeInput(dir: string, flags: { target?: string[]; destroy?: boolean; allowProtectedChanges?: boolean }): Pick<PlanInput, 'threshold' | 'protect' | 'allowProtected' | 'targets' | 'destroy'> {
  const safety = stackSafety(dir);
  return {
    threshold: safety.threshold, protect: safety.protect, allowProtected: !!flags.allowProtectedChanges,
    ...(flags.target?.length ? { targets: flags.target } : {}), ...(flags.destroy ? { destroy: true } : {}),
  };
}

/** An unknown `--target` is the user's mistake: said plainly (exit 1), with the nearest names. */
export function targetError(err: unknown): unknown {
  return err instanceof UnknownSelectorError ? new CliExit(EXIT.error, `error: ${err.message}`) : err;
}

export async function plan(out: Output, dir: string, flags: PlanFlags): Promise<void> {
  if (flags.json && flags.markdown) throw new CliExit(EXIT.error, 'choose one of --json and --markdown');
  const limit = markdownLimit(flags.markdownLimit);
  filesToPlan(dir); // a directory that is not there, or holds no manifest, fails before the service starts
  const { stack } = resolveStack(dir, flags.stack);
  const scope = scopeInput(dir, flags);
  const policy = policyInput(dir, flags);
  const client = await openTarget(flags, { readOnly: 'planning against an empty database', out, root: dir });
  let result;
  try {
    result = await preparePlan({
      root: dir, stack, strict: flags.strict, env: process.env, adopt: flags.adopt,
      config: reconcilerConfig(), ...scope, ...policy,
      adoptCommand: `edgeplane plan ${dir} --stack ${stack}${targetArgs(flags)} --adopt`,
    }, client, { closeAfterRead: true });
  } catch (err) {
    throw targetError(err);
  } finally {
    await client.close();
  }
  for (const p of result.problems) out.error(formatProblem(p));
  if (hasErrors(result.problems) || !result.plan) {
    // A machine reading stdout, or a pull-request comment, gets the problems too (stderr has them as text).
    if (flags.json) out.json({ valid: false, problems: result.problems });
    if (flags.markdown) out.line(problemsMarkdown(result.problems, limit));
    if (flags.outMarkdown) writeFileSync(flags.outMarkdown, problemsMarkdown(result.problems, Infinity) + '\n');
    throw new CliExit(EXIT.error);
  }
  const p = result.plan;
  if (flags.out) writeFileSync(flags.out, renderJson(p));
  // The command a cut comment names to see the whole plan: this plan's, flags that shape it included.
  // `target_name:` of edgeplane.yaml: the comment names the target by it, and shows no URL.
  const { targetName } = stackTarget(dir);
  const args = [dir, '--stack', stack, ...(targetName ? [] : targetArgv(flags)), ...(flags.target ?? []).flatMap((t) => ['--target', t]),
    ...(flags.destroy ? ['--destroy'] : []), ...(flags.adopt ? ['--adopt'] : []), ...(flags.allowProtectedChanges ? ['--allow-protected-changes'] : []),
    ...policy.policyOverrides.flatMap((o) => ['--override-policy', o.policy]), ...(policy.policyOverrides.length ? ['--reason', policy.policyOverrides[0].reason] : [])].map(shellWord).join(' ');
  const shown = targetName ? { ...p, target: targetName } : p;
  if (flags.outMarkdown) writeFileSync(flags.outMarkdown, renderMarkdown(shown, { limit: Infinity, args }));
  const text = flags.json ? renderJson(p) : flags.markdown ? renderMarkdown(shown, { limit, args }) : renderText(p, { color: useColor() });
  out.line(text.replace(/\n$/, ''));
  if (flags.out && !flags.json) info(out, `plan saved to ${displayPath(flags.out)}`);
  if (flags.outMarkdown && !flags.json) info(out, `the whole plan as Markdown written to ${displayPath(flags.outMarkdown)}`);
  if (p.conflicts.length) throw new CliExit(EXIT.error);
  if (denyingPolicies(p.policy).length) throw new CliExit(EXIT.blocked);
  if (p.blocked.length) throw new CliExit(EXIT.blocked);
  if (p.protectedChanges?.length && !flags.allowProtectedChanges) throw new CliExit(EXIT.blocked);
  if (flags.detailedExitcode && hasChanges(p)) throw new CliExit(EXIT.changes);
}

/** Below this a comment could not hold the summary and the note of what was left out. */
const MIN_MARKDOWN_LIMIT = 2_000;

function markdownLimit(flag: string | undefined): number {
  if (flag === undefined) return MARKDOWN_LIMIT;
  const n = /^\d+$/.test(flag.replace(/[_,]/g, '')) ? Number(flag.replace(/[_,]/g, '')) : NaN;
  if (!Number.isSafeInteger(n) || n < MIN_MARKDOWN_LIMIT) throw new CliExit(EXIT.error, `--markdown-limit must be a whole number of characters, at least ${MIN_MARKDOWN_LIMIT} (got ${JSON.stringify(flag)})`);
  return n;
}
