import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { prestart } from '../../src/cli/prestart.js';
import { abandonClaim, engineTier } from '../../src/embedded/spare.js';
import { embeddedTransport } from '../../src/embedded/embedded.js';
import { ApiClient } from '../../src/client/api-client.js';
import { cleanupDirs, tempDir } from '../helpers/reconcile.js';

afterAll(cleanupDirs);

const until = async (what: () => boolean, ms: number) => {
  for (const end = Date.now() + ms; !what() && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
  return what();
};

describe('a state directory claimed as the CLI starts and given back (abandonClaim)', () => {
  it('one that had a database: its engine may open meanwhile, but nothing is made in it (no key ring, nothing sealed) before the command takes it', async () => {
    // A directory whose secrets were sealed with EDGEPLANE_SECRETS_KEYS: it has no key ring file of its own.
    const dir = tempDir('ep-claim-');
    // The embedded engine, whatever database the suite runs on (a claim is made without DATABASE_URL only).
    const database = process.env.DATABASE_URL;
    delete process.env.DATABASE_URL;
    try {
      await claimAndGiveBack(dir);
    } finally {
      if (database !== undefined) process.env.DATABASE_URL = database;
    }
  }, 90_000);
});

async function claimAndGiveBack(dir: string): Promise<void> {
  const before = process.env.EDGEPLANE_SECRETS_KEYS;
  process.env.EDGEPLANE_SECRETS_KEYS = 'k1:' + Buffer.alloc(32, 7).toString('base64');
  try {
    const client = new ApiClient(await embeddedTransport(dir));
    await client.close();
  } finally {
    if (before === undefined) delete process.env.EDGEPLANE_SECRETS_KEYS;
    else process.env.EDGEPLANE_SECRETS_KEYS = before;
  }
  const files = readdirSync(dir).sort();
  expect(files).not.toContain('secrets.keys');
  // A command without the variable claims it, its thread opens the engine, and the command fails first.
  engineTier.liftoffOnly = false;
  prestart('apply', { state: dir }, undefined);
  expect(await until(() => existsSync(join(dir, 'pgdata', 'postmaster.pid')), 60_000), 'the engine opened').toBe(true);
  await new Promise((r) => setTimeout(r, 1500)); // what an app built now would have done by then
  await abandonClaim();
  expect(readdirSync(dir).sort()).toEqual(files);
}
