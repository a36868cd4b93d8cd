import { checkStack, resolveStack } from '../reconciler/manifests/config.js';
import { envFlag, EnvironmentError, selectEnvironment, type Environment } from '../reconciler/manifests/environments.js';
import { CliExit, EXIT } from './exit.js';

/** The flags of a command that reads a stack's manifests: `--stack`, `--env` (or EDGEPLANE_ENV). */
export interface StackFlags { stack?: string; env?: string }

/**
 * The stack and environment of a command on the manifests of `dir` (docs/manifests.md,
 * "Environments"): `--env` (or EDGEPLANE_ENV) chosen among the stack file's environments, whose
 * stack name the command uses unless `--stack` is given. A stack file with environments and no
 * `--env`, or an unknown one, is refused naming them (exit 1).
 */
export function stackOf(dir: string, flags: StackFlags): { stack: string; environment: Environment } {
  const base = resolveStack(dir, flags.stack); // refuses a stack file with problems, as before
  let environment: Environment;
  try {
    environment = selectEnvironment(dir, envFlag(flags.env));
  } catch (err) {
    if (err instanceof EnvironmentError) throw new CliExit(EXIT.error, `error: ${err.message}`);
    throw err;
  }
  const stack = flags.stack !== undefined ? checkStack(flags.stack, '--stack') : environment.stack ?? base.stack;
  return { stack, environment };
}

/** `--env NAME` as a user would repeat it in a command (none without an environment). */
export function envArgv(environment: Environment | undefined): string[] {
  return environment?.name !== undefined ? ['--env', environment.name] : [];
}
