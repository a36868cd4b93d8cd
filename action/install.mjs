#!/usr/bin/env node
// The action's install step: puts `edgeplane` on the PATH (npm's global prefix).
//   release  the package attached to the GitHub release v<version> of the action's repository
//            (<version>: the `version` input, else the package.json of the action's checkout,
//            so `uses: owner/edgeplane@<tag or commit>` installs the release of that version)
//   source   built from the action's own checkout (any ref, a commit included): slower
//   npm      edgeplane@<version> from the npm registry (once published)
//   none     already on the PATH
// No install script runs (--ignore-scripts): the job's secrets may be in this step's environment.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { input } from './lib.mjs';

const NPM_FLAGS = ['--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'];

/** The owner/name of the action's repository: `github.action_repository`, else read from its checkout's path (…/_actions/OWNER/NAME/REF). */
export function actionRepository(env = process.env) {
  if (/^[^/\s]+\/[^/\s]+$/.test(env.ACTION_REPOSITORY ?? '')) return env.ACTION_REPOSITORY;
  const parts = (env.GITHUB_ACTION_PATH ?? '').split(/[\\/]/).filter(Boolean);
  const at = parts.lastIndexOf('_actions');
  if (at >= 0 && parts.length >= at + 3) return `${parts[at + 1]}/${parts[at + 2]}`;
  return env.GITHUB_REPOSITORY; // the action used from the repository itself (`uses: ./`)
}

/** The npm commands the install takes, each as [cwd, args]. */
export function installCommands(how, { actionPath, version, tarballUrl, server = 'https://github.com', repository }) {
  if (how === 'none') return [];
  if (how === 'npm') return [[undefined, ['install', '--global', ...NPM_FLAGS, `edgeplane@${version}`]]];
  if (how === 'source') {
    return [
      [actionPath, ['ci', ...NPM_FLAGS]],
      [actionPath, ['run', 'build']],
      [undefined, ['install', '--global', ...NPM_FLAGS, actionPath]],
    ];
  }
  if (how === 'release') {
    if (!tarballUrl && !repository) throw new Error('install: release cannot tell the action\'s repository: give tarball-url, or install: source');
    const url = tarballUrl || `${server.replace(/\/+$/, '')}/${repository}/releases/download/v${version}/edgeplane-${version}.tgz`;
    return [[undefined, ['install', '--global', ...NPM_FLAGS, url]]];
  }
  throw new Error(`input install must be release, source, npm or none (got ${JSON.stringify(how)})`);
}

function main() {
  const actionPath = process.env.GITHUB_ACTION_PATH ?? fileURLToPath(new URL('..', import.meta.url));
  const version = input('version') || JSON.parse(readFileSync(join(actionPath, 'package.json'), 'utf8')).version;
  const how = input('install', 'release');
  const steps = installCommands(how, { actionPath, version, tarballUrl: input('tarball-url'), server: process.env.GITHUB_SERVER_URL, repository: actionRepository() });
  for (const [cwd, args] of steps) {
    console.log(`npm ${args.join(' ')}`);
    const r = spawnSync('npm', args, { cwd, stdio: 'inherit' });
    if (r.status !== 0) {
      const hint = how === 'release' ? ' (is there a release v' + version + ' with edgeplane-' + version + '.tgz attached? for a private repository, or a commit with no release, use install: source)' : '';
      console.log(`::error::installing edgeplane (install: ${how}) failed${hint}`);
      process.exit(1);
    }
  }
  const v = spawnSync('edgeplane', ['--version'], { encoding: 'utf8' });
  if (v.status !== 0) {
    console.log(`::error::edgeplane is not on the PATH after install: ${how}`);
    process.exit(1);
  }
  console.log(`edgeplane ${v.stdout.trim()}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
