import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hasEmbeddedState, stateDirOf } from '../embedded/state-dir-path.js';
import { claimStateDir, claimWritten, dropSpare, startSpare } from '../embedded/spare.js';
import { preloadTemplate, writeTemplateIntoNow } from '../store/pglite-template.js';
import { likelyEmbedded, type GuessFlags } from './early.js';
import { serviceOptionsFromEnv } from './service-config.js';

/**
 * When `command` will most likely run on the embedded service (`likelyEmbedded`, and no `api_url`
 * in the stack file), its thread is started now (`startSpare`), before the command loads. A wrong
 * guess costs only the spare thread's start (and a new state directory claimed and given back):
 * the command decides as before (`openTarget`).
 */
export function prestart(command: string, flags: GuessFlags, dir: string | undefined): void {
  // A thread started before the command was known (bin/edgeplane.js, `cli/early.ts`) and not wanted: stopped.
  if (!startsSpare(command, flags, dir)) dropSpare();
}

function startsSpare(command: string, flags: GuessFlags, dir: string | undefined): boolean {
  const likely = likelyEmbedded(command, flags);
  if (!likely || (dir !== undefined && pinsAnApi(dir))) return false;
  const database = process.env.DATABASE_URL;
  const stateDir = stateDirOf({ stateDir: flags.state });
  const fresh = database === undefined && !hasEmbeddedState(stateDir);
  // The state directory is taken now (a write on one with no database: its database is written from
  // the template here while the thread boots), and the thread starts the engine while the command
  // loads (`startSpare`; a command that fails before it opens the directory gives it back,
  // `abandonClaim`). Held by another process (serve, a watch), it is not: the command finds the
  // holder, or waits, as before; a new one's database is written once the command has it.
  const claim = database === undefined ? claimStateDir(stateDir, fresh) : undefined;
  startSpare({ readOnly: likely.readOnly, claim, appOptions: claim?.fresh ? optionsFromEnv() : undefined });
  if (claim && fresh) writeDatabase(stateDir);
  else if (claim) claimWritten();
  else if (fresh) preloadTemplate();
  return true;
}

/**
 * A claimed directory's database, from the template, and the thread told (it opens it then); if
 * that fails, the thread's engine makes it as it opens it (and says why, if it cannot).
 */
function writeDatabase(stateDir: string): void {
  try {
    writeTemplateIntoNow(join(stateDir, 'pgdata'));
  } catch { /* left to the engine's open */ }
  claimWritten();
}

/** The service's options, as the command reads them (`openTarget`); undefined if the environment is refused (the command says why). */
function optionsFromEnv(): ReturnType<typeof serviceOptionsFromEnv> | undefined {
  try {
    return serviceOptionsFromEnv();
  } catch {
    return undefined;
  }
}

/** The stack file mentions an `api_url` (its own or an environment's). */
function pinsAnApi(dir: string): boolean {
  for (const name of ['edgeplane.yaml', 'edgeplane.yml']) {
    try {
      if (/^\s*api_url\s*:/m.test(readFileSync(join(dir, name), 'utf8'))) return true;
    } catch { /* none there (or dir is a file) */ }
  }
  return false;
}
