#!/usr/bin/env node
// Which edgeplane command the action runs (`command` input): plan, apply, drift (plan, and keep
// an issue open while the live state drifts), install, or auto: plan on a pull request, apply on
// a push to the default branch, plan on anything else (a push to another branch, a schedule, a
// manual run). Output: command.
import { input, setOutput } from './lib.mjs';

function mode(command, event, ref, defaultBranch) {
  if (['plan', 'apply', 'drift', 'install'].includes(command)) return command;
  if (command !== 'auto') throw new Error(`input command must be auto, plan, apply, drift or install (got ${JSON.stringify(command)})`);
  if (event === 'push' && defaultBranch && ref === `refs/heads/${defaultBranch}`) return 'apply';
  return 'plan';
}

try {
  const chosen = mode(input('command', 'auto'), process.env.GITHUB_EVENT_NAME, process.env.GITHUB_REF, process.env.DEFAULT_BRANCH);
  console.log(`edgeplane ${chosen}`);
  setOutput('command', chosen);
} catch (err) {
  console.log(`::error::${err.message}`);
  process.exitCode = 1;
}
