import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hasEmbeddedState, stateDirOf } from '../embedded/state-dir-path.js';
import { startSpare } from '../embedded/spare.js';
import { preloadTemplate } from '../store/pglite-template.js';
import { ciVariable } from './ci.js';

const WRITES = new Set(['apply', 'destroy']);
const READS = new Set(['plan']);

/**
 * Whether `command` will most likely run on the embedded service, judged from what costs nothing
 * to look at; if so its thread is started now (`startSpare`), before the command loads. A wrong
 * guess costs only the spare thread's start: the command decides as before (`openTarget`). Not
 * started for an API (`--api-url`, EDGEPLANE_API_URL, an `api_url` in the stack file), a saved
 * plan, a CI job without `--state`, or a plan whose state directory has no database (it runs on
 * none).
 */
export function prestart(command: string, flags: { apiUrl?: string; state?: string; plan?: string }, dir: string | undefined): void {
  if (!WRITES.has(command) && !READS.has(command)) return;
  if (flags.apiUrl !== undefined || process.env.EDGEPLANE_API_URL !== undefined || flags.plan !== undefined) return;
  if (ciVariable() !== undefined && flags.state === undefined) return;
  if (dir !== undefined && pinsAnApi(dir)) return;
  const database = process.env.DATABASE_URL;
  if (database === '') return; // refused by the command
  const fresh = database === undefined && !hasEmbeddedState(stateDirOf({ stateDir: flags.state }));
  if (READS.has(command) && fresh) return;
  // A write on a directory with no database: its database is written from the template soon.
  startSpare({ readOnly: READS.has(command), freshWrite: fresh });
  if (fresh) preloadTemplate();
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
