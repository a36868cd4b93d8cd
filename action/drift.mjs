#!/usr/bin/env node
// The action's drift step (`command: drift`, a schedule): after the plan step, keeps one issue
// open while the live state differs from the manifests (plan exit 2 or 3), its body the plan,
// updated on each run; closes it, with a comment, on the first run that finds no drift. A plan
// that failed (exit 1) leaves the issue as it is (the plan step failed the job). GITHUB_TOKEN is
// given to this step alone (`issues: write`). Output: issue-url.
import { readFileSync } from 'node:fs';
import { GitHub } from './github.mjs';
import { input, runUrl, setOutput } from './lib.mjs';

async function main() {
  const dir = input('directory', '.');
  const code = input('plan-exitcode');
  if (!['0', '2', '3'].includes(code)) {
    console.log(`the plan did not finish (exit ${code || 'none'}): the drift issue is left as it is`);
    return;
  }
  const drifted = code !== '0';
  const run = runUrl();
  const sha = (process.env.GITHUB_SHA ?? '').slice(0, 12);
  const gh = new GitHub({ token: process.env.GITHUB_TOKEN, repository: process.env.GITHUB_REPOSITORY });
  const plan = drifted ? readFileSync(input('markdown-file'), 'utf8') : '';
  const r = await gh.syncIssue({
    marker: `<!-- edgeplane-drift dir=${dir.replace(/--/g, '-').replace(/>/g, '')} -->`,
    title: `edgeplane: live state drifted from the manifests of ${dir}`,
    body: `The live state differs from the manifests of \`${dir}\`${sha ? ` at ${sha}` : ''}: apply them, or change them to what is live.${code === '3' ? ' An apply would need `--force` (the safety threshold).' : ''}\n\n${plan}`,
    open: drifted,
    closing: `No drift any more${run ? ` (checked by [this run](${run}))` : ''}: closing.`,
    author: input('comment-author', 'github-actions[bot]'),
  });
  console.log(r.action === 'none' ? 'no drift, and no drift issue open' : `drift issue ${r.action}: ${r.issue.html_url ?? r.issue.number}`);
  setOutput('issue-url', r.issue?.html_url ?? '');
}

main().catch((err) => {
  console.log(`::error::${String(err.message ?? err).replace(/\n/g, ' ')}`);
  process.exitCode = 1;
});
