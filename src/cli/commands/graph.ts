import { existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { stackOf } from '../environment.js';
import { manifestFilesOrRefuse } from '../../reconciler/manifests/load.js';
import { formatProblem, hasErrors } from '../../reconciler/manifests/problems.js';
import { graphDot, graphMermaid, mermaidTooBig, scopeGraph, stackGraph } from '../../reconciler/graph/graph.js';
import { validateDir } from '../../reconciler/plan/prepare.js';
import { CliExit, EXIT } from '../exit.js';
import type { Output } from '../output.js';
import { UnknownSelectorError } from '../../reconciler/plan/selectors.js';

export interface GraphFlags { stack?: string; env?: string; format?: string; target?: string[] }

/** The stack's objects and references, from the manifests alone (no service is opened). */
export async function graph(out: Output, dir: string, flags: GraphFlags): Promise<void> {
  const format = flags.format ?? 'mermaid';
  if (format !== 'mermaid' && format !== 'dot') throw new CliExit(EXIT.error, `--format must be mermaid or dot (got ${JSON.stringify(format)})`);
  // The graph is the stack's, and a stack is its directory: one file alone has references into the
  // others that resolve nowhere, and not the edgeplane.yaml that names its stack.
  if (existsSync(dir) && statSync(dir).isFile()) throw new CliExit(EXIT.error, `${dir} is a file: graph draws a stack from the directory of its manifests; give the directory that holds it (${dirname(dir)})`);
  manifestFilesOrRefuse(dir);
  const { stack, environment } = stackOf(dir, flags);
  const v = validateDir({ root: dir, stack, environment });
  for (const p of v.problems) out.error(formatProblem(p));
  // References of manifests that do not validate may point nowhere: no picture of them.
  if (hasErrors(v.problems)) throw new CliExit(EXIT.error);
  let g = stackGraph(stack, v.objects);
  try {
    if (flags.target?.length) g = scopeGraph(g, flags.target);
  } catch (err) {
    throw err instanceof UnknownSelectorError ? new CliExit(EXIT.error, `error: ${err.message}`) : err;
  }
  const text = format === 'dot' ? graphDot(g) : graphMermaid(g);
  out.line(text.replace(/\n$/, ''));
  // Printed all the same (other renderers take more), and said on stderr.
  const tooBig = format === 'mermaid' ? mermaidTooBig(g, text) : undefined;
  if (tooBig) out.error(`warning: ${tooBig}`);
}
