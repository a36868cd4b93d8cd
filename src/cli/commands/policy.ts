import { manifestFiles } from '../../reconciler/manifests/load.js';
import { formatProblem, hasErrors } from '../../reconciler/manifests/problems.js';
import { runExamples } from '../../reconciler/policy/examples.js';
import { loadPolicyFiles } from '../../reconciler/policy/load.js';
import { CliExit, EXIT } from '../exit.js';
import type { Output } from '../output.js';

export interface PolicyTestFlags { json?: boolean }

/**
 * `edgeplane policy test PATH`: every policy in PATH (a folder, read recursively, or a file) is
 * loaded and compiled, then checked against its own examples. Exit 1 when a policy does not load
 * or an example does not come out as it says.
 */
export async function policyTest(out: Output, path: string, flags: PolicyTestFlags): Promise<void> {
  let files: string[];
  try {
    files = manifestFiles(path);
  } catch (err) {
    throw new CliExit(EXIT.error, `error: ${(err as Error).message}`);
  }
  if (!files.length) throw new CliExit(EXIT.error, `error: ${path}: no policy files (.yaml or .yml) here`);
  const loaded = loadPolicyFiles(files);
  const results = runExamples(loaded.set);
  const failed = results.filter((r) => !r.ok);
  const passed = !hasErrors(loaded.problems) && !failed.length;
  if (flags.json) {
    out.json({ passed, problems: loaded.problems, results });
  } else {
    for (const p of loaded.problems) out.error(formatProblem(p));
    for (const p of loaded.set.policies) {
      const mine = results.filter((r) => r.policy === p.name);
      const bad = mine.filter((r) => !r.ok);
      const count = `${mine.filter((r) => r.expect === 'pass').length} pass, ${mine.filter((r) => r.expect === 'fail').length} fail example${mine.length === 1 ? '' : 's'}`;
      if (!mine.length) out.line(`?    ${p.name}: no examples (add examples: {pass: [...], fail: [...]})`);
      else out.line(`${bad.length ? 'FAIL' : 'ok  '} ${p.name}: ${count}`);
      for (const r of bad) out.line(`     ${r.source.file}:${r.source.line}:${r.source.col}: examples.${r.expect}[${r.index}]: ${r.detail}`);
    }
    const policies = loaded.set.policies.length;
    out.line(`${policies} polic${policies === 1 ? 'y' : 'ies'}, ${results.length} example${results.length === 1 ? '' : 's'}: ${passed ? 'all as expected' : `${failed.length} not as expected${hasErrors(loaded.problems) ? `, ${loaded.problems.filter((p) => p.severity === 'error').length} errors loading` : ''}`}`);
  }
  if (!passed) throw new CliExit(EXIT.error);
}
