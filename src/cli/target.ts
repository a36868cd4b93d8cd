import { ApiClient } from '../client/api-client.js';
import { httpTransport } from '../client/transport.js';
import { LockHeldError } from '../store/dir-lock.js';

export interface TargetFlags { apiUrl?: string; apiKey?: string; state?: string }

/**
 * The API a command talks to: `--api-url` + `--api-key` (or their environment variables), else the
 * embedded service on the state directory. If another process (`edgeplane serve`) holds that
 * directory, the CLI talks to it over HTTP at the URL its lock records, with the embedded key.
 * `serviceThread` (watch, which plans again and again): the embedded service runs on a thread of
 * its own, beside the plans instead of between them (embedded-thread.ts). One-off commands run it
 * on the thread that plans: it starts faster and holds less, and one plan does not earn the
 * second thread back.
 */
export async function openTarget(flags: TargetFlags, how: { serviceThread?: boolean } = {}): Promise<ApiClient> {
  if (flags.apiUrl) {
    if (!flags.apiKey) throw new Error('--api-url needs --api-key (or EDGEPLANE_API_KEY)');
    return new ApiClient(httpTransport(flags.apiUrl, flags.apiKey));
  }
  if (flags.apiKey) throw new Error('--api-key needs --api-url (or EDGEPLANE_API_URL); without both the embedded service is used');
  const [{ readCredentials }, { stateDirOf }, { serviceOptionsFromEnv }] = await Promise.all([
    import('../client/embedded-credentials.js'), import('./state-dir.js'), import('./service-config.js'),
  ]);
  const stateDir = stateDirOf({ stateDir: flags.state });
  try {
    if (how.serviceThread) {
      const { embeddedThreadTransport } = await import('../client/embedded-thread.js');
      return new ApiClient(embeddedThreadTransport(stateDir, serviceOptionsFromEnv()));
    }
    // Loaded only for the embedded target: a command against a deployment never loads the service
    // or PGlite (about 45 MB of memory and a good part of start-up).
    const [{ embeddedTransport }, { openEngine }] = await Promise.all([import('../client/embedded.js'), import('./engine.js')]);
    const db = await openEngine({ stateDir });
    return new ApiClient(await embeddedTransport(db, stateDir, serviceOptionsFromEnv()));
  } catch (err) {
    const creds = readCredentials(stateDir);
    if (err instanceof LockHeldError && err.holder.url && creds) return new ApiClient(httpTransport(err.holder.url, creds.api_key));
    throw err;
  }
}

/** The target flags as a user would repeat them in a command (no key: it stays in the environment). */
export function targetArgs(flags: TargetFlags): string {
  if (flags.apiUrl) return ` --api-url ${flags.apiUrl}`;
  return flags.state ? ` --state ${flags.state}` : '';
}
