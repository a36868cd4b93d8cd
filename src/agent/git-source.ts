import { existsSync, mkdirSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Commit } from '../client/sync-record.js';
import { commitOf, git } from './git.js';
import type { SourceConfig } from './config.js';

/** User and password in a URL (`https://user:token@host/…`): never shown. */
export function redactUrl(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1***@');
}

/**
 * The environment `git` runs in: never a prompt; with `EDGEPLANE_GIT_SSH_KEY` (a key file) for
 * SSH URLs. A token for HTTPS (`EDGEPLANE_GIT_TOKEN`) is given by a credential helper that reads
 * it from the environment when git asks: it is on no command line and in no file.
 */
export function gitEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '', SSH_ASKPASS: '' };
  if (env.EDGEPLANE_GIT_SSH_KEY) {
    const key = `'${env.EDGEPLANE_GIT_SSH_KEY.replace(/'/g, `'\\''`)}'`;
    out.GIT_SSH_COMMAND = `ssh -i ${key} -o IdentitiesOnly=yes -o BatchMode=yes`;
  }
  return out;
}

const TOKEN_HELPER = '!f() { test "$1" = get || exit 0; echo username=x-access-token; echo "password=$EDGEPLANE_GIT_TOKEN"; }; f';

/**
 * One Git source: a branch or tag of a repository, fetched shallow (depth 1, that ref alone, as
 * Argo CD's repo server does) into a work tree of its own, checked out at the fetched commit.
 */
export class GitSource {
  readonly url: string;
  constructor(readonly config: SourceConfig, readonly dir: string, private readonly env: NodeJS.ProcessEnv = process.env) {
    // A local path through file://: the local transport ignores --depth.
    this.url = isAbsolute(config.url) ? pathToFileURL(config.url).href : config.url;
  }

  /** Fetches the ref and checks it out; the commit it is at. Throws with git's reason (no credentials in it). */
  async fetch(timeoutMs = 120_000): Promise<Commit> {
    const env = gitEnv(this.env);
    const auth = this.env.EDGEPLANE_GIT_TOKEN ? ['-c', 'credential.helper=', '-c', `credential.helper=${TOKEN_HELPER}`] : [];
    try {
      if (!existsSync(`${this.dir}/.git`)) {
        mkdirSync(this.dir, { recursive: true });
        await git(['init', '-q'], { cwd: this.dir, env });
      }
      await git([...auth, 'fetch', '--quiet', '--depth', '1', '--no-tags', '--force', this.url, this.config.ref], { cwd: this.dir, env, timeoutMs });
      await git(['checkout', '-q', '--force', '--detach', 'FETCH_HEAD'], { cwd: this.dir, env });
      await git(['clean', '-ffdxq'], { cwd: this.dir, env });
      return await commitOf(this.dir, 'HEAD', env);
    } catch (err) {
      throw new Error(`cannot fetch ${this.config.ref} of source ${this.config.name} (${redactUrl(this.config.url)}): ${redactUrl((err as Error).message)}`);
    }
  }
}
