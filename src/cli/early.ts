import { startSpare } from '../embedded/spare.js';
import { DEFAULT_STATE_DIR, hasEmbeddedState, stateDirOf } from '../embedded/state-dir-path.js';
import { ciVariable } from './ci.js';
import type { TargetFlags } from './target.js';

/** What of a command's flags decides whether it runs on the embedded service (`--plan`: a saved plan's). */
export type GuessFlags = Pick<TargetFlags, 'apiUrl' | 'state'> & { plan?: string };

const WRITES = new Set(['apply', 'destroy']);
const READS = new Set(['plan']);

/**
 * Whether `command` will most likely run on the embedded service, judged from what costs nothing to
 * look at (`flags` as commander gives them: `state` from `--state` or EDGEPLANE_STATE), and whether
 * it only reads: a plan, apply or destroy with no API (`--api-url`, EDGEPLANE_API_URL), no saved
 * plan, not a CI job without a state directory, DATABASE_URL not set empty (refused), and for a
 * plan a database to plan against (else it runs on none, empty-transport.ts). The one rule of
 * `earlySpare` and prestart.ts.
 */
export function likelyEmbedded(command: string | undefined, flags: GuessFlags, env: NodeJS.ProcessEnv = process.env): { readOnly: boolean } | undefined {
  if (command === undefined || (!WRITES.has(command) && !READS.has(command))) return undefined;
  if (flags.apiUrl !== undefined || env.EDGEPLANE_API_URL !== undefined || flags.plan !== undefined) return undefined;
  if (ciVariable(env) !== undefined && flags.state === undefined) return undefined;
  if (env.DATABASE_URL === '') return undefined;
  const readOnly = READS.has(command);
  if (readOnly && env.DATABASE_URL === undefined && !hasEmbeddedState(stateDirOf({ stateDir: flags.state ?? DEFAULT_STATE_DIR }))) return undefined;
  return { readOnly };
}

/**
 * Called by bin/edgeplane.js before the CLI's own modules load (some 20–60 ms of a command's start):
 * for a command that most likely runs on the embedded service, judged from the command line alone
 * (`earlySpare`), the service's thread starts now rather than in commander's preAction hook
 * (`cli/prestart.ts`), which then hands it its directory, or stops it if the command will not use
 * it (`dropSpare`). `argv`: the arguments after the program's name.
 */
export function startEarly(argv: readonly string[]): void {
  const early = earlySpare(argv);
  if (early) startSpare({ readOnly: early.readOnly, liftoffOnly: true });
}

/**
 * `likelyEmbedded` for a command line as it is, its flags read plainly: anything less plain
 * (global options before the command, help, `--state` with no value) or DATABASE_URL leaves the
 * start to prestart.
 */
export function earlySpare(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): { readOnly: boolean } | undefined {
  const [command, ...rest] = argv;
  // On PostgreSQL the thread opens no engine ahead: not worth starting before the command knows.
  if (env.DATABASE_URL !== undefined || rest.some((a) => /^(--help|-h)(=|$)/.test(a))) return undefined;
  const flag = (name: string): string | undefined | null => {
    const at = rest.findIndex((a) => a === name || a.startsWith(`${name}=`));
    if (at < 0) return undefined;
    return (rest[at].startsWith(`${name}=`) ? rest[at].slice(name.length + 1) : rest[at + 1]) || null;
  };
  const [apiUrl, plan, state] = [flag('--api-url'), flag('--plan'), flag('--state')];
  if (state === null) return undefined;
  // A flag given with no value counts as given: the command will refuse it.
  return likelyEmbedded(command, { apiUrl: apiUrl ?? (apiUrl === null ? '' : undefined), plan: plan ?? (plan === null ? '' : undefined), state: state ?? env.EDGEPLANE_STATE }, env);
}
