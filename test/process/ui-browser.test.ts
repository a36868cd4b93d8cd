import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli, startServe, type Running, type Served } from '../helpers/cli.js';
import { cleanupDirs, tempDir } from '../helpers/reconcile.js';
import { TestClient } from '../helpers/service.js';
import { HAS_CHROMIUM, launchBrowser, seriousViolations, step } from '../helpers/browser.js';

const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 'Ann', GIT_AUTHOR_EMAIL: 'ann@example.com', GIT_COMMITTER_NAME: 'Ann', GIT_COMMITTER_EMAIL: 'ann@example.com' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: GIT_ENV }).trim();
const XSS = '<img src=x onerror=alert(1)>';

/**
 * The status page in a real Chromium, against a real `serve` (the embedded database) and a real
 * sync agent reading a local bare Git repository: what a person signing in would see and do.
 */
describe.skipIf(!HAS_CHROMIUM)('the status page in Chromium', { timeout: 300_000 }, () => {
  let served: Served;
  let agent: Running;
  let key: string;
  let api: TestClient;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const dialogs: string[] = [];
  let navigations = 0;

  const until = async <T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const v = await fn().catch(() => undefined);
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out: ${what}\n${agent?.out().slice(-2000) ?? ''}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  beforeAll(async () => {
    const state = tempDir('ep-ui-state-');
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'ui', '--json', '--state', state]);
    expect(created.code, created.stderr).toBe(0);
    key = JSON.parse(created.stdout).api_key;
    served = await startServe(['--state', state]);
    api = new TestClient(served.url, key);

    // Stack `web`: synced from Git by an agent that checks for drift every second.
    const root = tempDir('ep-ui-git-');
    const bare = join(root, 'repo.git');
    const work = join(root, 'work');
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    execFileSync('git', ['clone', '-q', bare, work], { env: GIT_ENV, stdio: 'pipe' });
    git(work, 'checkout', '-q', '-B', 'main');
    mkdirSync(join(work, 'web'));
    writeFileSync(join(work, 'web', 'edgeplane.yaml'), 'stack: web\n');
    writeFileSync(join(work, 'web', 'pools.yaml'), 'kind: FailoverBackend\nname: pool\ndescription: the web pool\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n');
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', 'web: the pool');
    git(work, 'push', '-q', 'origin', 'main');
    agent = startCli(['agent', '--repo', bare, '--ref', 'main', '--path', 'web', '--interval', '1s', '--drift-interval', '1s', '--mode', 'apply', '--drift', 'report', '--port', '0'],
      { env: { EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: key } });
    await agent.waitFor(/edgeplane agent on (http:\/\/\S+) /);
    await until('web synced', async () => (await api.get('/stacks/web')).body?.status === 'synced');

    // Stack `legacy`: its last run failed (any tool may record a run). Stack `lab`: locked, never synced.
    expect((await api.post('/sync_runs', { stack: 'legacy', trigger: 'cli', holder: 'ci@runner-7', outcome: 'failed', counts: { create: 0, update: 0, replace: 0, delete: 0 }, error: 'HTTPSEdge/shop: 409 hostport in use' })).status).toBe(201);
    expect((await api.post('/stack_locks', { stack: 'lab', holder: 'bob@laptop, apply', ttl_seconds: 600 })).status).toBe(201);
    // An object nobody manages, whose description is markup.
    expect((await api.post('/backends/failover', { description: XSS, backends: [] })).status).toBe(201);

    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('dialog', (d) => { dialogs.push(d.message()); void d.dismiss(); });
    page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations++; });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    if (agent && agent.child.exitCode === null) {
      agent.child.kill('SIGTERM');
      await agent.exited;
    }
    await served?.stop();
    cleanupDirs();
  });

  it('signs in, shows three stacks with their badges, turns Out of sync by itself, opens a run, syncs now and signs out', async () => {
    await step(page, 'sign-in', async () => {
      await page.goto(`${served.url}/ui/`);
      expect(page.url()).toContain('/ui/login');
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByLabel('API key').fill('ep_not-a-key');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('That API key is not valid').waitFor();
      await page.getByLabel('API key').fill(key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Stacks' }).waitFor();
      const cookie = (await context.cookies()).find((c) => c.name === 'edgeplane_session')!;
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/ui' });
      expect(cookie.expires).toBeGreaterThan(Date.now() / 1000);
    });

    await step(page, 'three-stacks', async () => {
      const badgeOf = (stack: string) => page.locator(`tr[data-stack="${stack}"] .status`).innerText();
      expect(await page.locator('tbody tr').count()).toBe(3);
      expect(await badgeOf('web')).toMatch(/^Synced( Locked)?$/); // the agent holds the lock while it checks for drift
      expect(await badgeOf('legacy')).toBe('Failed');
      expect(await badgeOf('lab')).toBe('Never synced Locked');
      expect(await page.locator('tr[data-stack="lab"]').innerText()).toContain('bob@laptop, apply');
      expect(await page.locator('tr[data-stack="web"]').innerText()).toContain('web: the pool');
      expect(await seriousViolations(page)).toEqual([]);
    });

    await step(page, 'out-of-sync-without-reload', async () => {
      const before = navigations;
      const pool = (await api.get('/backends/failover')).body.backends.find((b: { description: string }) => b.description === 'the web pool');
      expect((await api.patch(`/backends/failover/${pool.id}`, { description: 'changed by hand' })).status).toBe(200);
      await page.locator('tr[data-stack="web"] .status', { hasText: 'Out of sync' }).waitFor({ timeout: 20_000 });
      expect(navigations, 'the page was not reloaded').toBe(before);
    });

    await step(page, 'open-a-run', async () => {
      await page.getByRole('link', { name: 'web', exact: true }).click();
      await page.getByRole('heading', { name: 'Stack web' }).waitFor();
      // The drifted object is marked, with the field that differs.
      expect(await page.locator('tr', { hasText: 'FailoverBackend/pool' }).locator('.drift').innerText()).toBe('Drifted description');
      expect(await seriousViolations(page)).toEqual([]);
      await page.locator('#runs tbody tr', { hasText: 'drifted' }).first().getByRole('link').click();
      await page.getByRole('heading', { name: 'Plan', exact: true }).waitFor();
      const plan = await page.locator('.plan').innerText();
      expect(plan).toContain('description');
      expect(plan).toContain('changed by hand');
      expect(await seriousViolations(page)).toEqual([]);
    });

    await step(page, 'sync-now', async () => {
      await page.goto(`${served.url}/ui/stacks/web`);
      const manual = () => page.locator('#runs tbody tr', { hasText: 'manual' }).count();
      expect(await manual()).toBe(0);
      // By keyboard: the first Tab reaches the skip link, and the button is a real button.
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
      await page.getByRole('button', { name: 'Sync now' }).focus();
      await page.keyboard.press('Enter');
      await until('a manual run shown', async () => (await manual()) > 0, 25_000);
    });

    await step(page, 'objects', async () => {
      await page.getByRole('link', { name: 'Objects' }).click();
      await page.getByRole('link', { name: 'Failover backends' }).click();
      const unmanaged = page.locator('tr', { hasText: XSS });
      await unmanaged.waitFor();
      expect(await unmanaged.innerText()).toContain('Unmanaged');
      expect(await page.locator('img').count()).toBe(0);
      // The manual sync (mode apply) put the pool's description back.
      expect(await page.locator('tr', { hasText: 'the web pool' }).innerText()).toContain('managed by web as FailoverBackend/pool');
      expect(await seriousViolations(page)).toEqual([]);
      expect(dialogs).toEqual([]);
    });

    await step(page, 'sign-out', async () => {
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      const part = await page.request.get(`${served.url}/ui/parts/stacks`, { headers: { 'x-edgeplane-fragment': '1' } });
      expect(part.status()).toBe(401);
      await page.goto(`${served.url}/ui/objects`);
      expect(page.url()).toContain('/ui/login');
    });
  });

  it('is readable at 360 px and in the dark theme', async () => {
    const small = await browser.newContext({ viewport: { width: 360, height: 740 }, colorScheme: 'dark' });
    const p = await small.newPage();
    try {
      await step(p, 'narrow-dark', async () => {
        await p.goto(`${served.url}/ui/login`);
        await p.getByLabel('API key').fill(key);
        await p.getByRole('button', { name: 'Sign in' }).click();
        await p.getByRole('heading', { name: 'Stacks' }).waitFor();
        for (const path of ['/ui/', '/ui/stacks/web', '/ui/objects']) {
          await p.goto(served.url + path);
          // Nothing wider than the screen but the tables' own scrolling boxes.
          expect(await p.evaluate(() => document.documentElement.scrollWidth), path).toBeLessThanOrEqual(360);
          expect(await p.evaluate(() => getComputedStyle(document.body).backgroundColor), path).toBe('rgb(13, 17, 23)');
          expect(await seriousViolations(p), path).toEqual([]);
        }
      });
    } finally {
      await small.close();
    }
  });

  it('answers with a strict CSP and refuses a form from another site', async () => {
    const res = await fetch(`${served.url}/ui/login`);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('same-origin');
    expect(await res.text()).not.toMatch(/<script>|\son\w+=/i);
    const login = await fetch(`${served.url}/ui/login`, {
      method: 'POST', redirect: 'manual', body: new URLSearchParams({ api_key: key }),
      headers: { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(login.status).toBe(403);
    expect(login.headers.get('set-cookie')).toBeNull();
  });
});
