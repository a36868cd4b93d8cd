import { writeFileSync } from 'node:fs';
import { displayPath } from '../../util/display-path.js';
import { stackSafety, stackTarget } from '../../reconciler/manifests/config.js';
import { envFlag, environmentNames } from '../../reconciler/manifests/environments.js';
import type { Problem } from '../../reconciler/manifests/problems.js';
import type { Plan } from '../../reconciler/plan/types.js';
import { didYouMean } from '../../util/suggest.js';
import { envArgv, stackOf } from '../environment.js';
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
  /** The environment (`--env`, EDGEPLANE_ENV); `all` or a list with commas plans each. */
  env?: string;
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

/** One environment's plan (or its problems), and what rendering it names. */
interface Planned { environment?: string; stack: string; problems: Problem[]; plan?: Plan; args: string; targetName?: string }

async function planOne(out: Output, dir: string, flags: PlanFlags, envName: string | undefined): Promise<Planned> {
  const { stack, environment } = stackOf(dir, { ...flags, env: envName });
  const scope = scopeInput(dir, flags);
  const policy = policyInput(dir, flags);
  const client = await openTarget(flags, { readOnly: 'planning against an empty database', out, root: dir, environment });
  const envArgs = envArgv(environment);
  let result;
  try {
    result = await preparePlan({
      root: dir, stack, strict: flags.strict, env: process.env, adopt: flags.adopt, environment,
      config: reconcilerConfig(), ...scope, ...policy,
      adoptCommand: `edgeplane plan ${dir}${envArgs.map((w) => ` ${w}`).join('')} --stack ${stack}${targetArgs(flags)} --adopt`,
    }, client, { closeAfterRead: true });
  } catch (err) {
    throw targetError(err);
  } finally {
    await client.close();
  }
  // `target_name:` of edgeplane.yaml (or of the environment): the comment names the target by it, and shows no URL.
  const targetName = environment.targetName ?? stackTarget(dir).targetName;
  // The command a cut comment names to see the whole plan: this plan's, flags that shape it included.
  const args = [dir, ...envArgs, '--stack', stack, ...(targetName ? [] : targetArgv(flags)), ...(flags.target ?? []).flatMap((t) => ['--target', t]),
    ...(flags.destroy ? ['--destroy'] : []), ...(flags.adopt ? ['--adopt'] : []), ...(flags.allowProtectedChanges ? ['--allow-protected-changes'] : []),
    ...policy.policyOverrides.flatMap((o) => ['--override-policy', o.policy]), ...(policy.policyOverrides.length ? ['--reason', policy.policyOverrides[0].reason] : [])].map(shellWord).join(' ');
  const plan = result.plan && environment.name !== undefined ? { ...result.plan, environment: environment.name } : result.plan;
  return { environment: environment.name, stack, problems: result.problems, ...(plan ? { plan } : {}), args, ...(targetName ? { targetName } : {}) };
}

/** The exit code of one planned environment (before it is thrown). */
function exitOf(r: Planned, flags: PlanFlags): number {
  const p = r.plan;
  if (hasErrors(r.problems) || !p) return EXIT.error;
  if (p.conflicts.length) return EXIT.error;
  if (denyingPolicies(p.policy).length) return EXIT.blocked;
  if (p.blocked.length) return EXIT.blocked;
  if (p.protectedChanges?.length && !flags.allowProtectedChanges) return EXIT.blocked;
  if (flags.detailedExitcode && hasChanges(p)) return EXIT.changes;
  return EXIT.ok;
}

/** Exit codes by severity: an error outranks a blocked plan, which outranks changes. */
const SEVERITY = [EXIT.ok, EXIT.changes, EXIT.blocked, EXIT.error] as number[];

export async function plan(out: Output, dir: string, flags: PlanFlags): Promise<void> {
  if (flags.json && flags.markdown) throw new CliExit(EXIT.error, 'choose one of --json and --markdown');
  const limit = markdownLimit(flags.markdownLimit);
  filesToPlan(dir); // a directory that is not there, or holds no manifest, fails before the service starts
  const many = manyEnvironments(dir, envFlag(flags.env));
  if (many) return planEnvironments(out, dir, flags, many, limit);
  const r = await planOne(out, dir, flags, envFlag(flags.env));
  for (const p of r.problems) out.error(formatProblem(p));
  if (hasErrors(r.problems) || !r.plan) {
    // A machine reading stdout, or a pull-request comment, gets the problems too (stderr has them as text).
    if (flags.json) out.json({ valid: false, problems: r.problems });
    if (flags.markdown) out.line(problemsMarkdown(r.problems, limit));
    if (flags.outMarkdown) writeFileSync(flags.outMarkdown, problemsMarkdown(r.problems, Infinity) + '\n');
    throw new CliExit(EXIT.error);
  }
  const p = r.plan;
  if (flags.out) writeFileSync(flags.out, renderJson(p));
  const shown = r.targetName ? { ...p, target: r.targetName } : p;
  if (flags.outMarkdown) writeFileSync(flags.outMarkdown, renderMarkdown(shown, { limit: Infinity, args: r.args }));
  const text = flags.json ? renderJson(p) : flags.markdown ? renderMarkdown(shown, { limit, args: r.args }) : renderText(p, { color: useColor() });
  out.line(text.replace(/\n$/, ''));
  if (flags.out && !flags.json) info(out, `plan saved to ${displayPath(flags.out)}`);
  if (flags.outMarkdown && !flags.json) info(out, `the whole plan as Markdown written to ${displayPath(flags.outMarkdown)}`);
  const code = exitOf(r, flags);
  if (code !== EXIT.ok) throw new CliExit(code);
}

/** `--env all` (every environment) or a list (`--env staging,production`): the names; else undefined. */
function manyEnvironments(dir: string, flag: string | undefined): string[] | undefined {
  if (flag === undefined || (flag !== 'all' && !flag.includes(','))) return undefined;
  const names = environmentNames(dir);
  if (!names.length) throw new CliExit(EXIT.error, `error: --env ${flag}: edgeplane.yaml beside ${dir} declares no environments`);
  if (flag === 'all') return names;
  const asked = flag.split(',').map((x) => x.trim()).filter(Boolean);
  for (const a of asked) if (!names.includes(a)) throw new CliExit(EXIT.error, `error: --env ${flag}: no environment ${JSON.stringify(a)}${didYouMean(a, names)}; the environments are ${names.join(', ')}`);
  return [...new Set(asked)];
}

/**
 * `plan --env all` (or a list): each environment planned in turn, as its own stack. Text: one plan
 * after another; JSON: `{environments: [{environment, stack, plan} | {environment, valid: false,
 * problems}]}`; Markdown: one comment with a section per environment, each within its share of
 * the one budget. The exit code is the highest of the environments' (error > blocked > changes).
 */
async function planEnvironments(out: Output, dir: string, flags: PlanFlags, names: string[], limit: number): Promise<void> {
  if (flags.out) throw new CliExit(EXIT.error, '--out saves one plan: give one environment (--env NAME) to save its plan');
  const results: Planned[] = [];
  for (const name of names) results.push(await planOne(out, dir, flags, name));
  for (const r of results) for (const p of r.problems) out.error(`[${r.environment}] ${formatProblem(p)}`);
  const shownOf = (r: Planned) => (r.plan && r.targetName ? { ...r.plan, target: r.targetName } : r.plan);
  const section = (r: Planned, budget: number) => (r.plan && !hasErrors(r.problems)
    ? renderMarkdown(shownOf(r)!, { limit: budget, args: r.args })
    : `### edgeplane plan for stack \`${r.stack}\` (environment \`${r.environment}\`)\n\n${problemsMarkdown(r.problems, Math.max(500, budget - 100))}`);
  if (flags.json) {
    out.json({ environments: results.map((r) => (r.plan && !hasErrors(r.problems) ? { environment: r.environment, stack: r.stack, plan: JSON.parse(renderJson(r.plan)) } : { environment: r.environment, stack: r.stack, valid: false, problems: r.problems })) });
  } else if (flags.markdown) {
    const header = `## edgeplane plan of ${results.length} environments: ${results.map((r) => r.environment).join(', ')}\n\n`;
    const share = Math.floor((limit - header.length) / results.length) - 10;
    out.line((header + results.map((r) => section(r, share).replace(/\n+$/, '')).join('\n\n---\n\n')).replace(/\n$/, ''));
  } else {
    out.line(results.map((r) => (r.plan && !hasErrors(r.problems) ? renderText(r.plan, { color: useColor() }) : `edgeplane plan: environment ${r.environment}: the manifests do not validate (the problems are above)\n`).replace(/\n$/, '')).join('\n\n'));
  }
  if (flags.outMarkdown) writeFileSync(flags.outMarkdown, results.map((r) => section(r, Infinity).replace(/\n+$/, '')).join('\n\n---\n\n') + '\n');
  const code = results.map((r) => exitOf(r, flags)).reduce((a, b) => (SEVERITY.indexOf(b) > SEVERITY.indexOf(a) ? b : a), EXIT.ok as number);
  if (code !== EXIT.ok) throw new CliExit(code);
}

/** Below this a comment could not hold the summary and the note of what was left out. */
const MIN_MARKDOWN_LIMIT = 2_000;

function markdownLimit(flag: string | undefined): number {
  if (flag === undefined) return MARKDOWN_LIMIT;
  const n = /^\d+$/.test(flag.replace(/[_,]/g, '')) ? Number(flag.replace(/[_,]/g, '')) : NaN;
  if (!Number.isSafeInteger(n) || n < MIN_MARKDOWN_LIMIT) throw new CliExit(EXIT.error, `--markdown-limit must be a whole number of characters, at least ${MIN_MARKDOWN_LIMIT} (got ${JSON.stringify(flag)})`);
  return n;
}
