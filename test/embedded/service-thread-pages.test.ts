import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { embeddedTransport } from '../../src/embedded/embedded.js';
import { kindByName } from '../../src/kinds/registry.js';

const backends = kindByName('failoverBackend');

describe('the embedded service thread reading a list ahead', () => {
  it('reads a whole list itself, each page once: the Link it follows is the page\'s own next link', async () => {
    const state = mkdtempSync(join(tmpdir(), 'edgeplane-pages-'));
    // The state directory's own database (with DATABASE_URL the embedded service would run on that one).
    const database = process.env.DATABASE_URL;
    delete process.env.DATABASE_URL;
    let client: ApiClient;
    try {
      client = new ApiClient(await embeddedTransport(state));
    } finally {
      if (database !== undefined) process.env.DATABASE_URL = database;
    }
    try {
      for (let i = 0; i < 250; i++) await client.create(backends, { backends: [] });
      const pages: number[] = [];
      const back = await client.transport.readPages!('/backends/failover?limit=100', (res) => {
        pages.push((res.body as { backends: unknown[] }).backends.length);
        return true;
      });
      // Handed back at no page: the thread followed every link itself, and read nothing twice.
      expect(back).toBeNull();
      expect(pages).toEqual([100, 100, 50]);
    } finally {
      await client.close();
      rmSync(state, { recursive: true, force: true });
    }
  }, 60_000);
});
