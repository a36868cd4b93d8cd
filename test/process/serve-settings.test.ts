import { readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { cleanupDirs, tempDir } from '../helpers/reconcile.js';

afterAll(cleanupDirs);

describe('serve refuses a setting it could not use, naming it, before it opens anything', () => {
  it.each([
    [{ EDGEPLANE_PUBLIC_URL: 'not a url' }, 'EDGEPLANE_PUBLIC_URL: must be an http:// or https:// URL'],
    [{ EDGEPLANE_PUBLIC_URL: 'https://api.example.com/?q=1' }, 'EDGEPLANE_PUBLIC_URL: must be an http:// or https:// URL'],
    [{ EDGEPLANE_VERSION_HEADERS: ',,' }, 'EDGEPLANE_VERSION_HEADERS: must be header names separated by commas'],
    [{ EDGEPLANE_VERSION_HEADERS: 'bad header' }, 'EDGEPLANE_VERSION_HEADERS: must be header names separated by commas'],
    [{ EDGEPLANE_JOB_POLL_MS: '0' }, 'EDGEPLANE_JOB_POLL_MS: must be at least 1 millisecond'],
    [{ EDGEPLANE_JOBS: 'of' }, 'EDGEPLANE_JOBS: must be on or off'],
    [{ EDGEPLANE_LOG_LEVEL: 'loud' }, '--log-level (EDGEPLANE_LOG_LEVEL): must be one of fatal, error, warn, info, debug, trace, silent'],
    [{ EDGEPLANE_REDIS_URL: 'redis://:::bad' }, 'EDGEPLANE_REDIS_URL: must be a redis:// or rediss:// URL'],
    [{ EDGEPLANE_REDIS_URL: 'redis://127.0.0.1:6379/x' }, 'EDGEPLANE_REDIS_URL: must be a redis:// or rediss:// URL'],
  ])('%o', async (env, message) => {
    const work = tempDir('ep-serve-settings-');
    const r = await runCli(['serve', '--port', '0'], { cwd: work, env: { ...env, DATABASE_URL: undefined } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(message);
    expect(readdirSync(work)).toEqual([]); // no state directory made
  });
});
