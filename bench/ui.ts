/**
 * `npm run bench:ui`: what the status page costs a browser. Starts `serve` on a new embedded state
 * directory, records 200 stacks (one run each, through the API) and 6,200 failover backends, then
 * measures in Debian's Chromium: the bytes of the stacks page and of the objects page (as sent, and
 * gzip-compressed as a proxy in front would send them), and the time from navigation to the first
 * row painted, against the time to a bare page of the same service (`/healthz`) in the same run.
 * `--screenshots DIR` also writes the pictures docs/ui.md shows.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BIN = join(ROOT, 'bin/edgeplane.js');
const arg = (name: string) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : undefined; };
const SHOTS = arg('--screenshots');
const STACKS = Number(arg('--stacks') ?? 200);
const OBJECTS = Number(arg('--objects') ?? 6200);

execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { stdio: 'inherit' });
const state = mkdtempSync(join(tmpdir(), 'edgeplane-bench-ui-'));
const env = { ...process.env };
delete env.DATABASE_URL;
delete env.EDGEPLANE_API_URL;
const key = JSON.parse(execFileSync(process.execPath, [BIN, 'admin', 'accounts', 'create', '--name', 'bench', '--json', '--state', state], { env, encoding: 'utf8' })).api_key as string;
const serve = spawn(process.execPath, [BIN, 'serve', '--state', state, '--port', '0'], { env: { ...env, EDGEPLANE_RATE_LIMIT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
const url = await new Promise<string>((resolve, reject) => {
  let out = '';
  serve.stdout.on('data', (d: Buffer) => { out += d; const m = /listening on (http:\/\/\S+)/.exec(out); if (m) resolve(m[1]); });
  serve.once('exit', (c) => reject(new Error(`serve exited ${c}: ${out}`)));
});

const headers = { authorization: `Bearer ${key}`, 'service-version': '2', 'content-type': 'application/json' };
async function post(path: string, body: unknown): Promise<void> {
  const res = await fetch(url + path, { method: 'POST', headers, body: JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
}
async function inBatches(n: number, make: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < n; i += 16) await Promise.all(Array.from({ length: Math.min(16, n - i) }, (_, j) => make(i + j)));
}
const outcomes = ['applied', 'no_changes', 'drifted', 'failed', 'blocked'] as const;
await inBatches(STACKS, (i) => post('/sync_runs', {
  stack: `stack-${String(i).padStart(3, '0')}`, trigger: 'commit', holder: 'agent@bench, pid 1', outcome: outcomes[i % outcomes.length],
  commit: { sha: createHash('sha1').update(`commit ${i}`).digest('hex'), subject: `release ${i}: routes and backends`, author: 'Ann <ann@example.com>' },
  counts: { create: i % 3, update: i % 5, replace: 0, delete: i % 2 }, drift_count: i % 4, duration_ms: 1200,
}));
await inBatches(OBJECTS, (i) => post('/backends/failover', { description: `pool ${i} of the bench`, backends: ['bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs'] }));

const browser = await chromium.launch({
  executablePath: process.env.EDGEPLANE_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
const page = await context.newPage();
await page.goto(`${url}/ui/login`);
await page.getByLabel('API key').fill(key);
await page.getByRole('button', { name: 'Sign in' }).click();
await page.getByRole('heading', { name: 'Stacks' }).waitFor();

/** Milliseconds from navigation start to the first `tbody tr` in the DOM and painted (median of 5). */
async function firstRow(path: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 6; i++) {
    await page.goto(url + path, { waitUntil: 'commit' });
    await page.locator('tbody tr').first().waitFor();
    const t = await page.evaluate(() => new Promise<number>((r) => requestAnimationFrame(() => r(performance.now()))));
    if (i > 0) times.push(t); // the first warms the caches
  }
  return times.sort((a, b) => a - b)[2];
}
async function bare(): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 6; i++) {
    await page.goto(`${url}/healthz`, { waitUntil: 'commit' });
    const t = await page.evaluate(() => new Promise<number>((r) => requestAnimationFrame(() => r(performance.now()))));
    if (i > 0) times.push(t);
  }
  return times.sort((a, b) => a - b)[2];
}
async function weight(path: string): Promise<{ raw: number; gz: number }> {
  const res = await page.request.get(url + path);
  let raw = 0;
  let gz = 0;
  for (const p of [path, '/ui/static/ui.css', '/ui/static/ui.js']) {
    const body = p === path ? await res.body() : await (await page.request.get(url + p)).body();
    raw += body.length;
    gz += gzipSync(body).length;
  }
  return { raw, gz };
}

const load = loadavg()[0];
const base = await bare();
const rows = [
  { name: `stacks page, ${STACKS} stacks (first page of 100)`, path: '/ui/' },
  { name: `objects page, ${OBJECTS} objects (first page of 50)`, path: '/ui/objects?kind=failoverBackend' },
];
console.log(`\nbench:ui — load average ${load.toFixed(2)}; a bare page of the service (/healthz) paints in ${base.toFixed(0)} ms\n`);
console.log('| page | bytes (page + css + js) | gzip | first row painted | × bare page |');
console.log('|---|--:|--:|--:|--:|');
for (const r of rows) {
  const w = await weight(r.path);
  const t = await firstRow(r.path);
  console.log(`| ${r.name} | ${(w.raw / 1024).toFixed(1)} KB | ${(w.gz / 1024).toFixed(1)} KB | ${t.toFixed(0)} ms | ${(t / base).toFixed(1)}× |`);
}

if (SHOTS) {
  mkdirSync(SHOTS, { recursive: true });
  const shot = async (name: string, path: string, opts: { width?: number; dark?: boolean } = {}) => {
    const ctx = await browser.newContext({ viewport: { width: opts.width ?? 960, height: opts.width ? 640 : 520 }, colorScheme: opts.dark ? 'dark' : 'light', storageState: await context.storageState() });
    const p = await ctx.newPage();
    await p.goto(url + path);
    await p.screenshot({ path: join(SHOTS, name) });
    await ctx.close();
  };
  await shot('stacks.png', '/ui/');
  await shot('stacks-dark-360.png', '/ui/', { width: 360, dark: true });
  await shot('stack.png', '/ui/stacks/stack-002');
  await shot('objects.png', '/ui/objects?kind=failoverBackend');
  console.log(`\nscreenshots in ${SHOTS}`);
}
await browser.close();
serve.kill('SIGTERM');
