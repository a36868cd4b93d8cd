import { isIPv4 } from 'node:net';
import { ApiClient } from '../client/api-client.js';
import { databaseUrl } from '../util/database-url.js';
import type { StateDirOptions } from '../embedded/state-dir-transport.js';
import { info, stateDirFor, stdio, type Output } from './output.js';
import { parseDuration } from './duration.js';
import { withoutCredentials } from '../util/shown-url.js';
import { LockHeldError } from '../store/dir-lock.js';
import { CliExit, EXIT } from './exit.js';
import { ciVariable } from './ci.js';
import { stackTarget } from '../reconciler/manifests/config.js';

/** `timeout`: each request's deadline (`--timeout`, `EDGEPLANE_TIMEOUT`), a duration. */
export interface TargetFlags { apiUrl?: string; apiKey?: string; state?: string; timeout?: string }

/** The request timeout in ms, from `--timeout` / `EDGEPLANE_TIMEOUT` (default 30 s). */
export function timeoutOf(flags: TargetFlags): number | undefined {
  if (flags.timeout === undefined) return undefined;
  const ms = parseDuration(flags.timeout, '--timeout (EDGEPLANE_TIMEOUT)');
  if (ms < 1) throw new Error('--timeout (EDGEPLANE_TIMEOUT) must be more than 0');
  return ms;
}

export interface TargetOptions extends StateDirOptions {
  /**
   * A command that only reads (plan, export): a state directory with no database is left as it is
   * — not made — and the command runs on an empty database in memory, saying so in these words
   * (`planning against an empty database`). Absent: the command writes, and the directory is
   * made (`ensureStateDir`).
   */
  readOnly?: string;
  /** Where the remarks go (the directory made, the empty database used). */
  out?: Output;
  /** The manifest directory: its `edgeplane.yaml` may pin the target (`api_url`, `embedded: true`). */
  root?: string;
  /** The environment chosen (`--env`): its own `api_url` / `embedded` win over the file's. */
  environment?: { apiUrl?: string; embedded?: boolean };
}

/**
 * The API key goes in every request's Authorization header: over plain `http://` to another host,
 * anyone on the path reads it. Refused unless the host is this machine's (a local `serve`, a
 * tunnel) or `EDGEPLANE_ALLOW_HTTP=1` says the network is trusted.
 */
function refuseCleartextKey(apiUrl: string): void {
  let u: URL;
  try {
    u = new URL(apiUrl);
  } catch {
    throw new Error(`--api-url (EDGEPLANE_API_URL) is not a URL: ${JSON.stringify(withoutCredentials(apiUrl).slice(0, 200))}`);
  }
  if (u.protocol !== 'http:' || process.env.EDGEPLANE_ALLOW_HTTP === '1') return;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost') || (isIPv4(host) && host.startsWith('127.')) || host === '::1') return;
  throw new Error(`${withoutCredentials(apiUrl)}: plain http:// to another host would send the API key in clear text; use https://, or set EDGEPLANE_ALLOW_HTTP=1 on a network you trust`);
}

/**
 * In CI, a run with no API URL would plan or apply against a throwaway database on the runner and
 * succeed: refused unless embedded is chosen on purpose (`--state` / `EDGEPLANE_STATE`, or
 * `embedded: true` in `edgeplane.yaml`).
 */
function refuseEmbeddedInCi(flags: TargetFlags, pinned: { embedded: boolean } | undefined): void {
  const ci = ciVariable();
  if (ci === undefined || flags.state !== undefined || pinned?.embedded) return;
  throw new CliExit(EXIT.error, `error: ${ci} is set (a CI job) and no API URL is given (--api-url, EDGEPLANE_API_URL, or api_url in edgeplane.yaml): refused, as the embedded service here would be a throwaway database on this machine. Pass the URL (is its secret given to this job?), or, for a stack meant to be local, set embedded: true in edgeplane.yaml or pass --state DIR`);
}

/**
 * The API a command talks to: `--api-url` + `--api-key` (or their environment variables), else the
 * embedded service on the state directory. If another process (`edgeplane serve`, or `watch`)
 * holds that directory, the CLI talks to it over HTTP at the URL its lock records, with the
 * embedded key; should that process stop while this command runs, the command opens the
 * directory again (itself, or through its next holder): see `stateDirTransport`.
 * `serveOthers` (watch): while this command holds the directory, its service also answers other
 * commands that way. `onRetarget` hears of such a move.
 */
export async function openTarget(flags: TargetFlags, how: TargetOptions = {}): Promise<ApiClient> {
  // Set but empty: a CI secret this job does not get (a pull request from a fork). Falling back to
  // the embedded service would plan against an empty database in the job's checkout.
  if (flags.apiUrl === '' || (flags.apiUrl === undefined && process.env.EDGEPLANE_API_URL === '')) {
    throw new Error(`${flags.apiUrl === '' && process.env.EDGEPLANE_API_URL === undefined ? '--api-url is' : 'EDGEPLANE_API_URL is set but'} empty (a CI secret this job does not get?): nothing planned; unset it to use the embedded service`);
  }
  const pinned = how.root !== undefined ? withEnvironment(stackTarget(how.root), how.environment) : undefined;
  // --state (EDGEPLANE_STATE) asks for the embedded service on that directory, and wins over the
  // file's api_url as --api-url does: a command meant to run locally never reaches the pinned
  // deployment (the costly mistake); the note says which api_url was not used.
  if (flags.apiUrl === undefined && pinned?.apiUrl && flags.state !== undefined) info(how.out ?? stdio, `note: --state (EDGEPLANE_STATE) ${flags.state} is used (the embedded service), not api_url ${pinned.apiUrl} of edgeplane.yaml`);
  else if (flags.apiUrl === undefined && pinned?.apiUrl) flags = { ...flags, apiUrl: pinned.apiUrl };
  // The flag and the environment win over the stack file; a differing URL is said, not silent.
  else if (flags.apiUrl && pinned?.apiUrl && flags.apiUrl !== pinned.apiUrl) info(how.out ?? stdio, `note: --api-url (EDGEPLANE_API_URL) ${withoutCredentials(flags.apiUrl)} is used, not api_url ${pinned.apiUrl} of edgeplane.yaml`);
  if (!flags.apiUrl) refuseEmbeddedInCi(flags, pinned);
  if (flags.apiUrl) {
    if (!flags.apiKey) throw new Error('--api-url needs --api-key (or EDGEPLANE_API_KEY)');
    refuseCleartextKey(flags.apiUrl);
    // Loaded only for a deployment: the embedded target never loads the HTTP client (undici).
    const { httpTransport } = await import('../client/transport.js');
    return new ApiClient(httpTransport(flags.apiUrl, flags.apiKey, { timeoutMs: timeoutOf(flags) }));
  }
  if (flags.apiKey) throw new Error('--api-key needs --api-url (or EDGEPLANE_API_URL); without both the embedded service is used');
  // Loaded only for the embedded target: a command against a deployment never starts the service.
  const [{ hasEmbeddedState, stateDirOf }, { serviceOptionsFromEnv }, { displayDir }] = await Promise.all([
    import('../embedded/state-dir.js'), import('./service-config.js'), import('../util/display-path.js'),
  ]);
  const out = how.out ?? stdio;
  const dir = stateDirOf({ stateDir: flags.state });
  // With DATABASE_URL the database is PostgreSQL's; the directory only keeps the CLI's key.
  const onPostgres = databaseUrl() !== undefined;
  if (how.readOnly !== undefined && !onPostgres && !hasEmbeddedState(dir)) {
    // A read-only command in the wrong working directory made a new ./state and planned
    // everything as new: now it makes nothing, and says what it plans against.
    // Its database would be empty: no engine is started at all (empty-transport.ts).
    info(out, `no embedded state at ${displayDir(dir)}: ${how.readOnly}`);
    const { emptyTransport } = await import('../embedded/empty-transport.js');
    return new ApiClient(emptyTransport(dir));
  }
  if (how.readOnly === undefined || onPostgres) await stateDirFor(dir, out);
  const { stateDirTransport } = await import('../embedded/state-dir-transport.js');
  try {
    return new ApiClient(await stateDirTransport(dir, serviceOptionsFromEnv(), { ...how, timeoutMs: timeoutOf(flags), readsOnly: how.readOnly !== undefined }));
  } catch (err) {
    // Waited its turn (--lock-timeout) and the directory is still another command's: as a stack lock held that long.
    if (how.waitMs !== undefined && err instanceof LockHeldError) throw new CliExit(EXIT.locked, `${err.message} Waited ${Math.round(how.waitMs / 1000)} s (--lock-timeout).`);
    throw err;
  }
}

/** The target flags as a user would repeat them in a command (no key: it stays in the environment; nor the URL's credentials). */
export function targetArgv(flags: TargetFlags): string[] {
  if (flags.apiUrl) return ['--api-url', withoutCredentials(flags.apiUrl)];
  return flags.state ? ['--state', flags.state] : [];
}

/** `targetArgv` as text to append to a command. */
export function targetArgs(flags: TargetFlags): string {
  return targetArgv(flags).map((w) => ` ${w}`).join('');
}

/** The stack file's target with an environment's own `api_url` / `embedded` over it. */
function withEnvironment<T extends { apiUrl?: string; embedded: boolean }>(t: T, env: { apiUrl?: string; embedded?: boolean } | undefined): T {
  if (!env) return t;
  return { ...t, ...(env.apiUrl !== undefined ? { apiUrl: env.apiUrl } : {}), ...(env.embedded !== undefined ? { embedded: env.embedded } : {}) };
}
