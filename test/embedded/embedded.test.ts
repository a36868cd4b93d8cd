import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { readCredentials } from '../../src/embedded/embedded-credentials.js';
import { embeddedTransport } from '../../src/embedded/embedded.js';
import { openTarget } from '../../src/cli/target.js';
import { kindByName } from '../../src/kinds/registry.js';
import { DirLock, LockHeldError } from '../../src/store/dir-lock.js';

// The embedded target is PGlite in the state directory, whatever DATABASE_URL says for other suites.
let saved: Record<string, string | undefined> = {};
beforeEach(() => {
  saved = { DATABASE_URL: process.env.DATABASE_URL };
  delete process.env.DATABASE_URL;
});
afterEach(() => {
  for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
});

const backends = kindByName('failoverBackend');

describe('the embedded service on a thread of its own', () => {
  it('serves requests and lists read ahead, holds the directory until closed, and keeps the data', async () => {
    const state = mkdtempSync(join(tmpdir(), 'edgeplane-thread-'));
    const client = new ApiClient(await embeddedTransport(state));
    try {
      // The lock is taken at once, on this thread: a second opener fails before anything starts.
      await expect(embeddedTransport(state)).rejects.toThrow(LockHeldError);
      const made: string[] = [];
      for (let i = 0; i < 205; i++) made.push(((await client.create(backends, { backends: [] })) as { id: string }).id);
      expect(readCredentials(state)?.api_key).toMatch(/^ep_/);
      for (const k of Object.keys(client.counts)) delete client.counts[k];
      const pages: number[] = [];
      const all = await client.list(backends, undefined, (items) => pages.push(items.length));
      expect(new Set(all.map((o) => o.id))).toEqual(new Set(made));
      expect(pages).toEqual([100, 100, 5]);
      expect(client.counts).toEqual({ GET: 3 });
      await expect(client.send('GET', '/backends/failover/fo_nope')).rejects.toMatchObject({ status: 404 });
    } finally {
      await client.close();
    }
    // Closed: the lock is released, and the next command reads the same.
    DirLock.acquire(state).release();
    const again = await openTarget({ state });
    try {
      expect(await again.list(backends)).toHaveLength(205);
    } finally {
      await again.close();
    }
  });

  it('a service that cannot start fails the requests made to it with its reason (it does not hang them)', async () => {
    process.env.DATABASE_URL = 'postgres://postgres@127.0.0.1:1/nothing-listens';
    const client = new ApiClient(await embeddedTransport(mkdtempSync(join(tmpdir(), 'edgeplane-thread-'))), { sleep: async () => {} });
    try {
      await expect(client.send('GET', '/certificate_authorities')).rejects.toThrow(/ECONNREFUSED|connect/);
      await expect(client.list(backends)).rejects.toThrow(/ECONNREFUSED|connect/);
    } finally {
      await client.close();
    }
  });
});

describe("the embedded directory's own account", () => {
  it('keeps its objects when the key is revoked or embedded.json is lost or corrupt: a new key for the same account, not a new account', async () => {
    const { ensureCredentials, credentialsPath } = await import('../../src/embedded/embedded-credentials.js');
    const { openPglite } = await import('../../src/store/pglite.js');
    const { migrate } = await import('../../src/store/migrate.js');
    const { revokeKey, listAccounts } = await import('../../src/service/auth.js');
    const { writeFileSync, rmSync } = await import('node:fs');
    const state = mkdtempSync(join(tmpdir(), 'edgeplane-creds-'));
    const db = await openPglite(null);
    try {
      await migrate(db);
      const first = await ensureCredentials(db, state);
      expect(await ensureCredentials(db, state)).toEqual(first); // remembered
      await revokeKey(db, first.key_id);
      const afterRevoke = await ensureCredentials(db, state);
      expect(afterRevoke.account_id).toBe(first.account_id);
      expect(afterRevoke.api_key).not.toBe(first.api_key);
      rmSync(credentialsPath(state));
      expect((await ensureCredentials(db, state)).account_id).toBe(first.account_id);
      writeFileSync(credentialsPath(state), '{"key_id":');
      expect((await ensureCredentials(db, state)).account_id).toBe(first.account_id);
      expect((await listAccounts(db)).map((a) => a.id)).toEqual([first.account_id]);
    } finally {
      await db.close();
    }
  });
});
