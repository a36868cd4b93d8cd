import { startSpare } from '../embedded/spare.js';
import { hasEmbeddedState, stateDirOf } from '../embedded/state-dir-path.js';
import { ciVariable } from './ci.js';

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
 * Whether to start the thread early, and for a command that only reads: `plan`, `apply` or
 * `destroy` as the first word, no API (`--api-url`, EDGEPLANE_API_URL), no saved plan, no
 * DATABASE_URL, not a CI job without a state directory, and for a plan, a state directory that
 * holds a database (else it runs on none). Anything less plain (global options before the
 * command, help) leaves the start to prestart.
 */
export function earlySpare(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): { readOnly: boolean } | undefined {
  const [command, ...rest] = argv;
  if (command !== 'plan' && command !== 'apply' && command !== 'destroy') return undefined;
  if (env.EDGEPLANE_API_URL !== undefined || env.DATABASE_URL !== undefined) return undefined;
  if (rest.some((a) => /^(--api-url|--plan|--help|-h)(=|$)/.test(a))) return undefined;
  const at = rest.findIndex((a) => a === '--state' || a.startsWith('--state='));
  const state = at < 0 ? env.EDGEPLANE_STATE : rest[at].startsWith('--state=') ? rest[at].slice('--state='.length) : rest[at + 1];
  if (at >= 0 && !state) return undefined;
  if (ciVariable(env) !== undefined && state === undefined) return undefined;
  if (command === 'plan' && !hasEmbeddedState(stateDirOf({ stateDir: state ?? env.EDGEPLANE_STATE ?? './state' }))) return undefined;
  return { readOnly: command === 'plan' };
}
