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
  const client = await openTarget(flags, { readOnly: 'planning against an empty database', out, root: dir });
  let result;
  try {
    result = await preparePlan({
      root: dir, stack, strict: flags.strict, env: process.env, adopt: flags.adopt,
      config: reconcilerConfig(), ...scope,
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
    ...(flags.destroy ? ['--destroy'] : []), ...(flags.adopt ? ['--adopt'] : []), ...(flags.allowProtectedChanges ? ['--allow-protected-changes'] : [])].map(shellWord).join(' ');
  const shown = targetName ? { ...p, target: targetName } : p;
  if (flags.outMarkdown) writeFileSync(flags.outMarkdown, renderMarkdown(shown, { limit: Infinity, args }));
  const text = flags.json ? renderJson(p) : flags.markdown ? renderMarkdown(shown, { limit, args }) : renderText(p, { color: useColor() });
  out.line(text.replace(/\n$/, ''));
  if (flags.out && !flags.json) info(out, `plan saved to ${displayPath(flags.out)}`);
  if (flags.outMarkdown && !flags.json) info(out, `the whole plan as Markdown written to ${displayPath(flags.outMarkdown)}`);
  if (p.conflicts.length) throw new CliExit(EXIT.error);
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
