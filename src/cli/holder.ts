import { hostname, userInfo } from 'node:os';
import { printable } from '../util/text.js';

/**
 * Who holds a stack lock, for the person who finds it held: `user@host pid N`, and the CI run
 * when the usual variables of a CI system say it is one.
 */
export function holderName(command: string, env: NodeJS.ProcessEnv = process.env): string {
  const parts = [userAtHost(env), `pid ${process.pid}`, command];
  const ci = ciRun(env);
  if (ci) parts.push(ci);
  // The service takes printable text only: a control character from the environment is written out.
  return printable(parts.join(', ')).slice(0, 500);
}

/** The pid of a holder `holderName` wrote on this machine (`user@<this host>, pid N, …`); undefined for another machine or format. */
export function pidHereOf(holder: string): number | undefined {
  const m = /^[^,]*@([^,@]+), pid (\d+),/.exec(holder);
  return m && m[1] === hostname() ? Number(m[2]) : undefined;
}

/** `user@host` of this process: how a holder starts. */
export function userAtHost(env: NodeJS.ProcessEnv = process.env): string {
  let user = env.USER ?? env.USERNAME ?? '';
  if (!user) {
    try { user = userInfo().username; } catch { user = 'unknown'; }
  }
  return `${user}@${hostname()}`;
}

function ciRun(env: NodeJS.ProcessEnv): string | undefined {
  if (env.GITHUB_ACTIONS && env.GITHUB_RUN_ID) {
    const server = env.GITHUB_SERVER_URL ?? 'https://github.com';
    return env.GITHUB_REPOSITORY ? `CI run ${server}/${env.GITHUB_REPOSITORY}/actions/runs/${env.GITHUB_RUN_ID}` : `GitHub Actions run ${env.GITHUB_RUN_ID}`;
  }
  if (env.GITLAB_CI) return `CI job ${env.CI_JOB_URL ?? env.CI_JOB_ID ?? ''}`.trim();
  if (env.BUILDKITE) return `CI build ${env.BUILDKITE_BUILD_URL ?? env.BUILDKITE_BUILD_NUMBER ?? ''}`.trim();
  if (env.CIRCLECI) return `CI build ${env.CIRCLE_BUILD_URL ?? env.CIRCLE_BUILD_NUM ?? ''}`.trim();
  if (env.JENKINS_URL || env.BUILD_URL) return `CI build ${env.BUILD_URL ?? env.BUILD_NUMBER ?? ''}`.trim();
  if (env.CI) return 'CI';
  return undefined;
}
