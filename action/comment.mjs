#!/usr/bin/env node
// The action's comment step: posts the plan (plan.mjs's comment file) as the pull request's one
// edgeplane comment for the directory, updated in place on every run. GITHUB_TOKEN is given to
// this step alone. Output: comment-url.
import { readFileSync } from 'node:fs';
import { GitHub } from './github.mjs';
import { input, marker, setOutput } from './lib.mjs';

async function main() {
  const event = JSON.parse(readFileSync(process.env.GITHUB_EVENT_PATH, 'utf8'));
  const issue = event.pull_request?.number ?? event.issue?.number;
  if (!issue) {
    console.log('not a pull request: no comment');
    return;
  }
  const body = readFileSync(input('comment-file'), 'utf8');
  const gh = new GitHub({ token: process.env.GITHUB_TOKEN, repository: process.env.GITHUB_REPOSITORY });
  const { action, comment } = await gh.upsertComment(issue, marker(input('directory', '.')), body, input('comment-author', 'github-actions[bot]'));
  console.log(`comment ${action}: ${comment.html_url ?? comment.id}`);
  setOutput('comment-url', comment.html_url ?? '');
}

main().catch((err) => {
  console.log(`::error::${String(err.message ?? err).replace(/\n/g, ' ')}`);
  process.exitCode = 1;
});
