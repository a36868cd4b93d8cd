import { formatProblem, hasErrors } from '../../reconciler/manifests/problems.js';
import { diffEnvironments, renderEnvDiffMarkdown, renderEnvDiffText } from '../../reconciler/manifests/diff-env.js';
import { manifestFilesOrRefuse } from '../../reconciler/manifests/load.js';
import { validateDir } from '../../reconciler/plan/prepare.js';
import { CliExit, EXIT } from '../exit.js';
import type { Output } from '../output.js';
import { stackOf } from '../environment.js';

export interface DiffEnvFlags { json?: boolean; markdown?: boolean; detailedExitcode?: boolean }

/** `edgeplane diff-env A B DIR`: how environment B's desired state differs from A's, from the manifests alone. */
export async function diffEnv(out: Output, a: string, b: string, dir: string, flags: DiffEnvFlags): Promise<void> {
  if (flags.json && flags.markdown) throw new CliExit(EXIT.error, 'choose one of --json and --markdown');
  manifestFilesOrRefuse(dir);
  const sides = [a, b].map((name) => {
    const { stack, environment } = stackOf(dir, { env: name });
    const v = validateDir({ root: dir, stack, environment });
    for (const p of v.problems) if (p.severity === 'error') out.error(`[${name}] ${formatProblem(p)}`);
    if (hasErrors(v.problems)) return undefined;
    return v.objects;
  });
  if (!sides[0] || !sides[1]) throw new CliExit(EXIT.error, 'error: the manifests do not validate in both environments (the problems are above)');
  const d = diffEnvironments(a, sides[0], b, sides[1]);
  if (flags.json) out.json(d);
  else out.line((flags.markdown ? renderEnvDiffMarkdown(d) : renderEnvDiffText(d)).replace(/\n$/, ''));
  if (flags.detailedExitcode && (d.changed.length || d.onlyIn.length)) throw new CliExit(EXIT.changes);
}
