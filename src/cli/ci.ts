/**
 * The variables a CI system sets in every job. `CI` is set by most (GitHub Actions, GitLab,
 * CircleCI, Buildkite, Travis, Bitbucket, Drone, Woodpecker, …); the others are for the systems
 * that do not set it (Jenkins, Azure Pipelines, TeamCity, AWS CodeBuild, Bamboo) or where a job
 * may unset it.
 */
export const CI_VARIABLES = [
  'CI', 'GITHUB_ACTIONS', 'GITLAB_CI', 'BUILDKITE', 'CIRCLECI', 'JENKINS_URL', 'TF_BUILD',
  'TEAMCITY_VERSION', 'CODEBUILD_BUILD_ID', 'BITBUCKET_BUILD_NUMBER', 'DRONE', 'TRAVIS', 'bamboo_buildKey',
] as const;

/** The first CI variable set in `env` (not empty, `false` or `0`), or undefined when this does not look like CI. */
export function ciVariable(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return CI_VARIABLES.find((v) => {
    const value = env[v];
    return value !== undefined && value !== '' && value.toLowerCase() !== 'false' && value !== '0';
  });
}
