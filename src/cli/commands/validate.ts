import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { checkStack, DEFAULT_STACK, readStackFile } from '../../reconciler/manifests/config.js';
import { manifestFilesOrRefuse } from '../../reconciler/manifests/load.js';
import { formatProblem, hasErrors, sortProblems } from '../../reconciler/manifests/problems.js';
import { validateDir } from '../../reconciler/plan/prepare.js';
import { resolveSecrets } from '../../reconciler/manifests/secrets.js';
import { CliExit, EXIT } from '../exit.js';
import { envFlag, EnvironmentError, selectEnvironment, type Environment } from '../../reconciler/manifests/environments.js';
import type { Output } from '../output.js';

export interface ValidateFlags { strict?: boolean; stack?: string; env?: string; json?: boolean; allowMissingSecrets?: boolean }

export async function validate(out: Output, dir: string, flags: ValidateFlags): Promise<void> {
  manifestFilesOrRefuse(dir); // no manifest file at all is a wrong path far more often than a stack meant empty: plan and apply refuse it too
  // The stack file's problems are reported with the manifests' (all in one run); the manifests
  // are still checked, under the stack it would name if it could be read.
  const file = readStackFile(dir);
  const fileStack = typeof file.settings.stack === 'string' && !file.problems.some((p) => p.path === 'stack') ? file.settings.stack : undefined;
  let environment: Environment;
  try {
    // Read as far as the stack file goes: its own problems are reported below, with the manifests'.
    environment = selectEnvironment(dir, envFlag(flags.env), { lenient: true });
  } catch (err) {
    if (err instanceof EnvironmentError) throw new CliExit(EXIT.error, `error: ${err.message}`);
    throw err;
  }
  const stack = flags.stack !== undefined ? checkStack(flags.stack, '--stack') : environment.stack ?? fileStack ?? DEFAULT_STACK;
  const r = validateOne(dir, stack, flags.strict, environment);
  // Secrets are read as plan reads them: a variable that is not set is an error here too, not a
  // surprise at plan time. A job that has no secrets (a fork's pull request) says so.
  const secrets = resolveSecrets(r.objects, stack, { env: process.env, cwd: process.cwd() });
  const missing = secrets.problems.filter((p) => p.rule === 'secret-missing');
  const skipped = flags.allowMissingSecrets ? missing.length : 0;
  const secretProblems = flags.allowMissingSecrets ? secrets.problems.filter((p) => p.rule !== 'secret-missing') : secrets.problems;
  r.problems = sortProblems([...file.problems, ...r.problems, ...secretProblems]);
  const errors = r.problems.filter((p) => p.severity === 'error').length;
  if (flags.json) out.json({ valid: errors === 0, problems: r.problems });
  else {
    for (const p of r.problems) out.error(formatProblem(p));
    const objects = r.objects.reduce((n, o) => n + 1 + o.children.length, 0);
    const warnings = r.problems.length - errors;
    const withErrors = new Set(r.problems.filter((p) => p.severity === 'error').map((p) => p.file)).size;
    out.line(errors
      ? `${errors} error${errors > 1 ? 's' : ''}${warnings ? `, ${warnings} warning${warnings > 1 ? 's' : ''}` : ''} in ${withErrors} file${withErrors === 1 ? '' : 's'}`
      : `${r.files.length} file${r.files.length === 1 ? '' : 's'}, ${objects} object${objects === 1 ? '' : 's'}: valid${warnings ? ` (${warnings} warning${warnings > 1 ? 's' : ''})` : ''}${skipped ? `; ${skipped} secret${skipped > 1 ? 's' : ''} not set here (--allow-missing-secrets)` : ''}`);
  }
  if (hasErrors(r.problems)) throw new CliExit(EXIT.error);
}

/**
 * A directory is validated whole. One file is validated with the manifests of its directory
 * around it — its references name objects of the other files, and names and unique values are
 * checked across them — and only its own problems and objects are reported.
 */
function validateOne(root: string, stack: string, strict: boolean | undefined, environment: Environment) {
  if (!statSync(root).isFile()) return validateDir({ root, stack, strict, environment, checkPolicies: true });
  const all = validateDir({ root: dirname(root), stack, strict, environment, checkPolicies: true });
  const file = resolve(root);
  const mine = (f: string) => resolve(f) === file;
  return { problems: all.problems.filter((p) => mine(p.file)), objects: all.objects.filter((o) => mine(o.doc.file)), files: [root] };
}
