import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

describe('the embedded service on a thread of its own, in a process', () => {
  it('a process that closes the transport while a list is being read waits for the thread, then exits normally', () => {
    // The list ending while the close waits must not let the process go: Node would end it with
    // code 13 (a top-level await never settled) and nothing printed — `edgeplane plan` on a
    // missing directory did that, the manifests failing while the first pages were being read.
    const state = mkdtempSync(join(tmpdir(), 'edgeplane-close-'));
    const script = `import { ApiClient } from './src/client/api-client.ts';
      import { embeddedTransport } from './src/embedded/embedded.ts';
      import { kindByName } from './src/kinds/registry.ts';
      const client = new ApiClient(await embeddedTransport(${JSON.stringify(state)}));
      const reading = client.list(kindByName('failoverBackend')).then((l) => 'listed ' + l.length, (e) => 'list failed');
      await client.close();
      console.log('closed;', await reading);`;
    const env = { ...process.env };
    delete env.DATABASE_URL;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../../', import.meta.url)), env, encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).not.toMatch(/Error/);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^closed; (listed 0|list failed)$/m);
  }, 90_000);
});
