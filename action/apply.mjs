#!/usr/bin/env node
// The action's apply step (the default branch): annotations for the manifests' problems, then
// `edgeplane apply --auto-approve`; its output goes to the job summary. Exits with apply's code
// (0 done, 1 failed, 3 blocked by the safety threshold, 5 the stack locked).
import { annotations, appendTo, capped, edgeplane, flag, input, setOutput, SUMMARY_LIMIT, words } from './lib.mjs';

async function main() {
  const dir = input('directory', '.');
  const common = [...(flag('strict') ? ['--strict'] : []), ...(input('stack') ? ['--stack', input('stack')] : [])];
  const checked = await edgeplane(['validate', dir, '--json', ...common], { echoStdout: false });
  try {
    for (const line of annotations(JSON.parse(checked.stdout).problems ?? [])) console.log(line);
  } catch { /* no JSON: apply says why */ }
  const applied = await edgeplane(['apply', dir, '--auto-approve', '--parallelism', input('parallelism', '8'), ...common, ...words(input('args'))]);
  const text = capped(`${applied.stdout}${applied.stderr ? `\n${applied.stderr}` : ''}`.trim(), SUMMARY_LIMIT - 1_000, '(cut here: the whole output is in the log)');
  // A fence longer than any run of backticks in the text: nothing in it ends the block.
  const fence = '`'.repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
  const status = applied.code === 0 ? 'done' : `failed (exit ${applied.code})`;
  appendTo('GITHUB_STEP_SUMMARY', `### edgeplane apply of \`${dir}\`: ${status}\n\n${fence}text\n${text}\n${fence}\n`);
  setOutput('exitcode', applied.code);
  process.exitCode = applied.code;
}

main().catch((err) => {
  console.log(`::error::${String(err.message ?? err).replace(/\n/g, ' ')}`);
  process.exitCode = 1;
});
