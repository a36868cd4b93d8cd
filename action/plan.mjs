#!/usr/bin/env node
// The action's plan step (pull requests): annotations for the manifests' problems, then
// `edgeplane plan --markdown`; writes the comment's text to a file (the comment step posts it)
// and the whole plan to the job summary. Outputs: exitcode (plan's: 0 none, 2 changes,
// 3 blocked by the safety threshold, 1 failed), changes (true/false), comment-file.
// Exits 1 when the plan could not be made, after writing the comment that says why.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { annotations, appendTo, capped, edgeplane, flag, input, marker, runUrl, setOutput, SUMMARY_LIMIT, words } from './lib.mjs';

/** The plan's share of the comment: GitHub takes 65,536 characters, and the marker, notes and footer need the rest. */
const COMMENT_LIMIT = 64_000;

const MEANING = { 0: 'no changes', 1: 'failed', 2: 'changes', 3: 'blocked by the safety threshold (an apply would need --force)' };

async function main() {
  const dir = input('directory', '.');
  const common = [...(flag('strict') ? ['--strict'] : []), ...(input('stack') ? ['--stack', input('stack')] : [])];
  const work = mkdtempSync(join(process.env.RUNNER_TEMP || tmpdir(), 'edgeplane-plan-'));

  // Annotations first: they need no API, and point at the very line of the diff.
  const checked = await edgeplane(['validate', dir, '--json', ...common], { echoStdout: false });
  let problems = [];
  try { problems = JSON.parse(checked.stdout).problems ?? []; } catch { /* no JSON: the plan below says why */ }
  for (const line of annotations(problems)) console.log(line);

  const full = join(work, 'plan-full.md');
  const planned = await edgeplane(['plan', dir, '--markdown', '--markdown-limit', String(COMMENT_LIMIT), '--detailed-exitcode', '--out-markdown', full, ...common, ...words(input('args'))], { echoStdout: false });
  const code = planned.code;
  console.log(`edgeplane plan exited ${code}: ${MEANING[code] ?? 'failed'}`);
  const run = runUrl();
  const sha = headSha();
  const parts = [marker(dir)];
  if (planned.stdout.trim()) parts.push(planned.stdout.trim());
  else parts.push(`### edgeplane plan of \`${dir}\` failed\n\nNo plan was made (the API unreachable, a key refused, a stack locked?): ${run ? `the [run's log](${run})` : 'the job\'s log'} says why.`);
  if (code === 3) parts.push('> [!WARNING]\n> **Over the safety threshold**: an apply of these manifests needs `--force` (docs/reconciler.md, "Safety threshold").');
  const planMade = code === 0 || code === 2 || code === 3;
  parts.push(`<sub>${planMade ? 'Planned' : 'Checked'}${sha ? ` at ${sha.slice(0, 12)}` : ''}${run ? ` by [this run](${run})` : ''}${planMade ? '; the whole plan is in the run\'s summary' : ''}.</sub>`);
  const comment = join(work, 'comment.md');
  writeFileSync(comment, parts.join('\n\n') + '\n');

  const summary = existsSync(full) ? readFileSync(full, 'utf8') : parts.slice(1).join('\n\n');
  appendTo('GITHUB_STEP_SUMMARY', capped(summary, SUMMARY_LIMIT, `> **Cut here**: the plan is longer than a job summary holds; \`edgeplane plan ${dir} --out-markdown FILE\` writes it whole.`));

  setOutput('exitcode', code);
  setOutput('changes', code === 2 || code === 3);
  setOutput('comment-file', comment);
  if (!planMade) {
    console.log(`::error::${problems.some((p) => p.severity === 'error') ? 'the manifests have problems (annotated above)' : `edgeplane plan exited ${code}`}`);
    process.exitCode = 1;
  }
}

/** The pull request's head commit (the merge commit GitHub makes is not the one reviewed). */
function headSha() {
  try {
    return JSON.parse(readFileSync(process.env.GITHUB_EVENT_PATH, 'utf8')).pull_request?.head?.sha ?? process.env.GITHUB_SHA;
  } catch {
    return process.env.GITHUB_SHA;
  }
}

main().catch((err) => {
  console.log(`::error::${String(err.message ?? err).replace(/\n/g, ' ')}`);
  process.exitCode = 1;
});
