import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { embeddedTransport } from '../../src/embedded/embedded.js';
import type { Transport } from '../../src/client/transport.js';
import { openTarget } from '../../src/cli/target.js';
import { kindByName } from '../../src/kinds/registry.js';
import { collectionPath } from '../../src/contract/paths.js';
import { readHolder } from '../../src/store/dir-lock.js';

// The embedded target is PGlite in the state directory, whatever DATABASE_URL says for other suites.
let saved: string | undefined;
beforeEach(() => {
  saved = process.env.DATABASE_URL;
  delete process.env.DATABASE_URL;
});
afterEach(() => {
  if (saved === undefined) delete process.env.DATABASE_URL; else process.env.DATABASE_URL = saved;
});

const backends = kindByName('failoverBackend');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The directory's service as `watch` runs it: holding the lock and serving other commands at the
 * URL it records there. In this process: the lock names this pid, alive, so `openTarget` here goes
 * through it over HTTP, as another process would.
 */
async function holder(state: string): Promise<{ transport: Transport; url: string }> {
  const transport = await embeddedTransport(state, {}, { serveOthers: true });
  for (let i = 0; i < 600; i++) {
    const url = readHolder(join(state, 'lock'))?.url;
    if (url) return { transport, url };
    await sleep(50);
  }
  throw new Error('the holder never recorded its URL');
}

/**
 * A state directory that has been opened once and closed (its database, account and key made),
 * as a command left it: made once for the file, each test gets a copy of its own.
 */
let opened: string;
beforeAll(async () => {
  const saved = process.env.DATABASE_URL;
  delete process.env.DATABASE_URL;
  try {
    opened = mkdtempSync(join(tmpdir(), 'edgeplane-opened-'));
    await (await openTarget({ state: opened })).close();
  } finally {
    if (saved !== undefined) process.env.DATABASE_URL = saved;
  }
}, 120_000);
afterAll(() => rmSync(opened, { recursive: true, force: true }));
function openedBefore(): string {
  const state = mkdtempSync(join(tmpdir(), 'edgeplane-holder-'));
  cpSync(opened, state, { recursive: true });
  return state;
}

/** A loopback port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

describe('a command that went through the holder of its state directory, when the holder stops', { timeout: 120_000 }, () => {
  it('opens the directory itself and carries on: the request that found the holder gone included', async () => {
    const state = mkdtempSync(join(tmpdir(), 'edgeplane-holder-'));
    const first = await holder(state);
    const moves: string[] = [];
    const client = await openTarget({ state }, { onRetarget: (from, to) => moves.push(`${from} -> ${to}`) });
    try {
      expect(client.target).toBe(first.url);
      const made = (await client.create(backends, { backends: [] })) as { id: string };
      await first.transport.close(); // Ctrl-C on the first watch: port closed, lock released
      expect(readHolder(join(state, 'lock'))).toBeNull();
      // A write: refused, nothing of it was received, so it is sent again to the directory's own service.
      const second = (await client.create(backends, { backends: [] })) as { id: string };
      expect(client.target).toBe(`embedded:${state}`);
      expect(moves).toEqual([`${first.url} -> embedded:${state}`]);
      expect(readHolder(join(state, 'lock'))?.pid).toBe(process.pid); // this command holds it now
      expect((await client.list(backends)).map((o) => o.id).sort()).toEqual([made.id, second.id].sort());
    } finally {
      await client.close();
    }
    expect(readHolder(join(state, 'lock'))).toBeNull();
  });

  it('follows the next holder when another process has taken the directory (and serves it)', async () => {
    const state = mkdtempSync(join(tmpdir(), 'edgeplane-holder-'));
    const first = await holder(state);
    const client = await openTarget({ state });
    let next: Awaited<ReturnType<typeof holder>> | undefined;
    try {
      await client.create(backends, { backends: [] });
      await first.transport.close();
      next = await holder(state);
      expect(next.url).not.toBe(first.url);
      expect(await client.list(backends)).toHaveLength(1);
      expect(client.target).toBe(next.url);
      expect(readHolder(join(state, 'lock'))?.url).toBe(next.url); // it did not take the lock
    } finally {
      await client.close();
      await next?.transport.close();
    }
  });

  it("the holder's own links (a list's next page) are followed on the directory reopened", async () => {
    const state = mkdtempSync(join(tmpdir(), 'edgeplane-holder-'));
    const first = await holder(state);
    const client = await openTarget({ state });
    try {
      for (let i = 0; i < 25; i++) await client.create(backends, { backends: [] });
      const list = `${collectionPath(backends, null)}?limit=10`;
      const page1 = (await client.send('GET', list)) as { next_page_uri: string; backends: unknown[] };
      expect(page1.next_page_uri.startsWith(`${first.url}/`)).toBe(true);
      await first.transport.close();
      const page2 = (await client.send('GET', page1.next_page_uri)) as { backends: unknown[] };
      expect(client.target).toBe(`embedded:${state}`);
      expect(page2.backends).toHaveLength(10);
      // The same link, read ahead by the transport (as a list goes on from a page it had).
      const pages: number[] = [];
      const back = await client.transport.readPages!(page1.next_page_uri, (res) => {
        pages.push((res.body as { backends: unknown[] }).backends.length);
        return true;
      });
      expect(back).toBeNull();
      expect(pages).toEqual([10, 5]);
    } finally {
      await client.close();
    }
  });

  it('while the lock still names the same holder (it is stopping, or hangs), the refusal is the answer; once released, the directory is reopened', async () => {
    const state = openedBefore(); // the directory's account and key made
    const url = `http://127.0.0.1:${await closedPort()}`;
    const lock = join(state, 'lock');
    writeFileSync(lock, JSON.stringify({ pid: process.ppid, host: hostname(), started_at: 'earlier', url }));
    const client = new ApiClient((await openTarget({ state })).transport, { readAttempts: 1 });
    try {
      expect(client.target).toBe(url);
      await expect(client.send('GET', '/certificate_authorities')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      expect(client.target).toBe(url);
      expect(readHolder(lock)?.url).toBe(url); // left alone: its process is alive
      rmSync(lock); // released
      await expect(client.send('GET', '/certificate_authorities')).resolves.toBeDefined();
      expect(client.target).toBe(`embedded:${state}`);
    } finally {
      await client.close();
    }
  });

  it('a directory taken meanwhile by a process that serves nothing: the request fails saying so, and a later one gets through', async () => {
    const state = openedBefore();
    const lock = join(state, 'lock');
    const url = `http://127.0.0.1:${await closedPort()}`;
    writeFileSync(lock, JSON.stringify({ pid: process.ppid, host: hostname(), started_at: 'earlier', url }));
    const client = new ApiClient((await openTarget({ state })).transport, { readAttempts: 1 });
    try {
      writeFileSync(lock, JSON.stringify({ pid: process.ppid, host: hostname(), started_at: 'later' })); // a plan, say
      await expect(client.send('GET', '/certificate_authorities')).rejects.toThrow(
        new RegExp(`ECONNREFUSED.*: the process that served ${state} there has stopped, and ${state} cannot be opened now: ${state} is in use by process ${process.ppid}`),
      );
      rmSync(lock);
      await expect(client.send('GET', '/certificate_authorities')).resolves.toBeDefined();
      expect(client.target).toBe(`embedded:${state}`);
    } finally {
      await client.close();
    }
  });
});

describe('a command that goes through the holder of its state directory', { timeout: 60_000 }, () => {
  it('gives up at its own --timeout, not the default, when the holder accepts and never answers', async () => {
    const state = openedBefore(); // the directory's account and key made
    const silent = createServer(() => {}); // accepts, never answers (a holder stopped with SIGSTOP)
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    writeFileSync(join(state, 'lock'), JSON.stringify({ pid: process.ppid, host: hostname(), started_at: 'earlier', url }));
    const client = await openTarget({ state, timeout: '0.3' });
    try {
      expect(client.target).toBe(url);
      await expect(client.send('GET', '/certificate_authorities')).rejects.toMatchObject({ code: 'EP_TIMEOUT', message: expect.stringContaining('no answer within 0.3 s') });
    } finally {
      await client.close();
      silent.close();
    }
  });
});
