/**
 * `npx tsx bench/page-prefetch.ts` — does the HTTP transport's page-reader thread pay for itself?
 * The no-op plan at 6,200 objects (bench/reconcile.ts's manifests) against `edgeplane serve` on
 * PostgreSQL, read three ways, interleaved round after round (the machine is shared: compare the
 * ratios within a round, not the times):
 *
 *   worker     httpTransport as it is: list pages read on the page-reader thread (readPages)
 *   main       the same transport without readPages: ApiClient reads the pages on the main
 *              thread, asking for each next page before the one just read is handed on
 *   main-tail  main thread too, the next page asked for before the page just read is parsed
 *              (its next link read from the end of its text)
 *
 * Each round runs, for each variant (in an order rotated every round): a no-op plan (`preparePlan`)
 * and the list pages alone (`readLiveState`). Flags: --rounds N (default 15, after 2 not counted).
 * Env: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test; a database of its own is
 * created for `serve`, and dropped). JSON in bench/results/page-prefetch-<time>.json.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ApiClient } from '../src/client/api-client.js';
import { connectionPool, exchange } from '../src/client/http-exchange.js';
import { nextLink } from '../src/client/page-loop.js';
import { API_VERSION, httpTransport, VERSION_HEADER, type Transport } from '../src/client/transport.js';
import { parse } from '../src/client/worker-channel.js';
import { applyPlan } from '../src/reconciler/apply/execute.js';
import { secretsFromMap } from '../src/reconciler/apply/materialize.js';
import { preparePlan } from '../src/reconciler/apply/prepare.js';
import { readLiveState } from '../src/reconciler/state/read-state.js';
import { createAccount } from '../src/service/auth.js';
import { migrate } from '../src/store/migrate.js';
import { openPostgres } from '../src/store/postgres.js';
import { caCertificates } from './ca-certs.js';
import { mainThreadTimes } from './cpu-share.js';
import { FULL, objectCount, writeManifests } from './reconcile-manifests.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CACHE = join(ROOT, 'bench', '.cache');
const PG_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const i = process.argv.indexOf('--rounds');
const ROUNDS = i > 0 ? Number(process.argv[i + 1]) : 15;
const WARMUP = 2;
const log = (s: string) => process.stderr.write(s + '\n');
const now = () => performance.now();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' });

async function startServe(databaseUrl: string): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const a = probe.address();
      probe.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'edgeplane.js'), 'serve', '--port', String(port), '--log-level', 'warn'], {
    env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const closed = new Promise<void>((r) => child.on('close', () => r()));
  const url = `http://127.0.0.1:${port}`;
  for (let n = 0; ; n++) {
    try {
      await fetch(url);
      break;
    } catch {
      if (child.exitCode !== null || n > 600) throw new Error(`serve did not start: ${err}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, stop: async () => { child.kill('SIGTERM'); await closed; } };
}

/** The transport without its reader thread: ApiClient's own page loop. */
function mainThread(url: string, key: string): Transport {
  const http = httpTransport(url, key);
  return { target: http.target, request: http.request, close: http.close };
}

/** Main thread, each next page asked for as soon as the page before it is in, before it is parsed. */
function mainThreadTail(url: string, key: string): Transport {
  const http = httpTransport(url, key);
  const origin = new URL(url).origin;
  const timeoutMs = 30_000;
  const pool = connectionPool(origin, timeoutMs);
  const headers = { [VERSION_HEADER]: API_VERSION, authorization: `Bearer ${key}`, accept: 'application/json', prefer: 'etags' };
  const get = (u: string) => exchange(u, { method: 'GET', pool, headers, timeoutMs });
  return {
    target: http.target,
    request: http.request,
    readsAhead: () => true,
    async readPages(path, onPage) {
      let at = /^https?:/.test(path) ? path : origin + path;
      let pending = get(at);
      for (;;) {
        let r;
        try { r = await pending; } catch { return { path: at }; }
        if (r.status < 200 || r.status >= 300) return { path: at, res: { status: r.status, headers: r.headers, body: parse(r.text) } };
        const next = nextLink(r.text);
        const more = next !== null && next !== at && new URL(next).origin === origin;
        if (more) (pending = get(next)).catch(() => {});
        if (!onPage({ status: r.status, headers: r.headers, body: parse(r.text) }) || next === null) return null;
        if (!more) return { path: next };
        at = next;
      }
    },
    async close() { await pool.destroy(); await http.close(); },
  };
}

interface Times { plan: number[]; fetch: number[]; planRun: number[]; planWait: number[]; planCpu: number[] }

async function main() {
  const started = new Date();
  const loadStart = loadavg().map((x) => x.toFixed(2)).join(' ');
  const database = 'ep_bench_pf_' + randomBytes(4).toString('hex');
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  const dbUrl = new URL(PG_URL);
  dbUrl.pathname = `/${database}`;
  const db = await openPostgres(dbUrl.toString(), { max: 2 });
  const clients: ApiClient[] = [];
  let serve: { url: string; stop(): Promise<void> } | undefined;
  try {
    await migrate(db);
    serve = await startServe(dbUrl.toString());
    const { api_key: key } = await createAccount(db, { name: 'bench' });
    const manifests = join(CACHE, `manifests-${FULL.edges}-${FULL.cas}`);
    writeManifests(manifests, FULL, caCertificates(FULL.cas, join(CACHE, 'ca-certs.json')), randomBytes(3).toString('hex'));
    log(`apply from empty (${objectCount(FULL)} objects)…`);
    const setup = new ApiClient(httpTransport(serve.url, key));
    clients.push(setup);
    const prepared = await preparePlan({ root: manifests, stack: 'bench', env: {} }, setup);
    const applied = await applyPlan(prepared.plan!, { client: setup, secrets: secretsFromMap(prepared.secrets), parallelism: 8 });
    if (applied.failed.length) throw new Error(`apply failed: ${JSON.stringify(applied.failed.slice(0, 3))}`);

    const variants: [string, ApiClient][] = [
      ['worker', new ApiClient(httpTransport(serve.url, key))],
      ['main', new ApiClient(mainThread(serve.url, key))],
      ['main-tail', new ApiClient(mainThreadTail(serve.url, key))],
    ];
    clients.push(...variants.map(([, c]) => c));
    const times = new Map(variants.map(([name]) => [name, { plan: [], fetch: [], planRun: [], planWait: [], planCpu: [] } as Times]));
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      log(`round ${round + 1} of ${WARMUP + ROUNDS}${round < WARMUP ? ' (not counted)' : ''}…`);
      for (let k = 0; k < variants.length; k++) {
        const [name, client] = variants[(round + k) % variants.length];
        const t = times.get(name)!;
        for (const c of Object.keys(client.counts)) delete client.counts[c];
        const s0 = mainThreadTimes();
        const c0 = process.cpuUsage();
        const p0 = now();
        const noop = await preparePlan({ root: manifests, stack: 'bench', env: {} }, client);
        const planMs = now() - p0;
        const cpu = process.cpuUsage(c0);
        const s1 = mainThreadTimes();
        if (noop.plan!.steps.length) throw new Error(`${name}: no-op plan has ${noop.plan!.steps.length} steps`);
        if (client.counts.GET !== 12) throw new Error(`${name}: ${JSON.stringify(client.counts)} requests, not 12 GETs`);
        const f0 = now();
        await readLiveState(client);
        const fetchMs = now() - f0;
        if (round < WARMUP) continue;
        t.plan.push(planMs);
        t.fetch.push(fetchMs);
        t.planCpu.push((cpu.user + cpu.system) / 1000);
        if (s0 && s1) {
          t.planRun.push(s1.runMs - s0.runMs);
          t.planWait.push(s1.waitMs - s0.waitMs);
        }
      }
    }
    const loadEnd = loadavg().map((x) => x.toFixed(2)).join(' ');
    const worker = times.get('worker')!;
    const rows = variants.map(([name]) => {
      const t = times.get(name)!;
      const perRound = t.plan.map((p, r) => p / worker.plan[r]);
      return {
        variant: name,
        plan_ms: Math.round(median(t.plan)),
        fetch_ms: Math.round(median(t.fetch)),
        plan_vs_fetch: +(median(t.plan) / median(t.fetch)).toFixed(2),
        plan_vs_worker_plan: +median(perRound).toFixed(2),
        plan_vs_worker_plan_range: [Math.min(...perRound), Math.max(...perRound)].map((x) => +x.toFixed(2)),
        plan_cpu_ms: Math.round(median(t.planCpu)),
        planning_thread_run_ms: t.planRun.length ? Math.round(median(t.planRun)) : null,
        planning_thread_wait_ms: t.planWait.length ? Math.round(median(t.planWait)) : null,
        plan_runs_ms: t.plan.map(Math.round),
        fetch_runs_ms: t.fetch.map(Math.round),
      };
    });
    const fmt = (l: string[]) => `| ${l.join(' | ')} |`;
    process.stdout.write([
      `\npage prefetch, no-op plan at ${objectCount(FULL)} objects on PostgreSQL — ${started.toISOString()}, ${ROUNDS} rounds after ${WARMUP}, load average ${loadStart} → ${loadEnd}\n`,
      fmt(['variant', 'no-op plan (median)', 'list pages alone', 'plan / page fetch', 'plan / worker\'s plan, same round: median (range)', 'process CPU per plan', 'planning thread on a core / waiting']),
      fmt(['---', '---', '---', '---', '---', '---', '---']),
      ...rows.map((r) => fmt([r.variant, `${r.plan_ms} ms`, `${r.fetch_ms} ms`, String(r.plan_vs_fetch), `${r.plan_vs_worker_plan} (${r.plan_vs_worker_plan_range.join('–')})`, `${r.plan_cpu_ms} ms`, `${r.planning_thread_run_ms} / ${r.planning_thread_wait_ms} ms`])),
      '',
    ].join('\n'));
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    const file = join(ROOT, 'bench', 'results', `page-prefetch-${started.toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify({ started, load_average: [loadStart, loadEnd], rounds: ROUNDS, warmup: WARMUP, rows }, null, 2) + '\n');
    log(`results: ${file}`);
  } finally {
    for (const c of clients) await c.close();
    await serve?.stop();
    await db.close();
    await admin.query(`DROP DATABASE ${database}`);
    await admin.end();
  }
}

await main();
