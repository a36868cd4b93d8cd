import { resolveStack } from '../../reconciler/manifests/config.js';
import { manifestFilesOrRefuse } from '../../reconciler/manifests/load.js';
import { formatProblem, hasErrors } from '../../reconciler/manifests/problems.js';
import { validateDir } from '../../reconciler/pipeline.js';
import { CliExit, EXIT } from '../exit.js';
import type { Output } from '../output.js';

export interface ValidateFlags { strict?: boolean; stack?: string; json?: boolean }

export async function validate(out: Output, dir: string, flags: ValidateFlags): Promise<void> {
  manifestFilesOrRefuse(dir); // no manifest file at all is a wrong path far more often than a stack meant empty: plan and apply refuse it too
  const { stack } = resolveStack(dir, flags.stack);
  const r = validateDir({ root: dir, stack, strict: flags.strict });
  const errors = r.problems.filter((p) => p.severity === 'error').length;
  if (flags.json) out.json({ valid: errors === 0, problems: r.problems });
  else {
    for (const p of r.problems) out.error(formatProblem(p));
    const objects = r.objects.reduce((n, o) => n + 1 + o.children.length, 0);
    const warnings = r.problems.length - errors;
    const withErrors = new Set(r.problems.filter((p) => p.severity === 'error').map((p) => p.file)).size;
    out.line(errors
      ? `${errors} error${errors > 1 ? 's' : ''}${warnings ? `, ${warnings} warning${warnings > 1 ? 's' : ''}` : ''} in ${withErrors} file${withErrors === 1 ? '' : 's'}`
      : `${r.files.length} file${r.files.length === 1 ? '' : 's'}, ${objects} object${objects === 1 ? '' : 's'}: valid${warnings ? ` (${warnings} warning${warnings > 1 ? 's' : ''})` : ''}`);
  }
  if (hasErrors(r.problems)) throw new CliExit(EXIT.error);
}
