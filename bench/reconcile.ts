/**
 * `npm run bench:reconcile` — the reconciler at scale (issue 6): 1,000 HTTPS edges × 5 routes +
 * 100 CAs + 100 failover backends (6,200 objects), on PostgreSQL and on the embedded engine.
 *
 *   apply from empty        wall time of apply (library, parallelism 8) beside the same creates
 *                           replayed raw (no DAG, retries or progress) at the same concurrency
 *   no-op plan              requests, wall time, beside fetching the list pages alone, beside the
 *                           same plan against those pages replayed from memory (no server running)
 *                           and beside a one-GET-per-object refresh; the planning thread's time
 *                           on a core and waiting for one, and the server's CPU (Linux, /proc);
 *                           plus `edgeplane plan` as a process (wall time and peak RSS, /usr/bin/time)
 *   watch                   save → applied for a one-field change, median of 20
 *   Markdown render         `plan --markdown` (within 65,000 characters) and `--out-markdown` (whole)
 *                           of the plan from empty and of a plan updating every edge's and CA's
 *                           description, median of 9 each
 *
 * Flags: --engines pglite,postgres  --scale N (default 1: N × every count; 10 is about 62,000 objects)
 *        --only noop (the apply and the no-op plan rows alone; noop,watch adds the watch row)
 *        --only apply (apply from empty and the same creates replayed raw, alone)
 *        --base REF [--rounds N] (this tree against commit REF in one run: bench/reconcile-pair.ts)
 *        --out FILE (the JSON results there)
 *        --edges N (default 1000 × scale)  --watch-runs N (default 20)
 * Env: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test; a database of the bench's
 * own is created on that server for an `edgeplane serve` process, and dropped). Results: a table on stdout, JSON in bench/results/reconcile-<time>.json.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiClient, PAGE_SIZE } from '../src/client/api-client.js';
import { httpTransport, type Transport } from '../src/client/transport.js';
import { embeddedTransport, readCredentials } from '../src/embedded/embedded.js';
import { kindByName } from '../src/kinds/registry.js';
import { applyPlan } from '../src/reconciler/apply/execute.js';
import { materializeRequest, secretsFromMap } from '../src/reconciler/apply/materialize.js';
import { preparePlan } from '../src/reconciler/plan/prepare.js';
import { manifestKinds } from '../src/reconciler/manifests/schema.js';
import type { Plan, Step } from '../src/reconciler/plan/types.js';
import { renderMarkdown, renderMarkdownFull } from '../src/reconciler/render/markdown.js';
import { readLiveState } from '../src/reconciler/state/read-state.js';
import { startWatchSession, type WatchReport } from '../src/reconciler/watch/session.js';
import { buildApp } from '../src/service/app.js';
import { createAccount } from '../src/service/auth.js';
import { collectionPath } from '../src/contract/paths.js';
import type { Db } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';
import { openPglite } from '../src/store/pglite.js';
import { openPostgres } from '../src/store/postgres.js';
import { caCertificates } from './ca-certs.js';
import { mainThreadTimes, processesCpuMs } from './cpu-share.js';
import { FULL, objectCount, writeManifests, type BenchSize } from './reconcile-manifests.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
if (process.argv.includes('--base')) {
  await (await import('./reconcile-pair.js')).runPair(ROOT, process.argv.slice(2));
  process.exit(0);
}
// The `serve` and `plan` processes measured are the package's compiled CLI (bin/edgeplane.js):
// dist/ is built first if a source is newer.
execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' });
const CACHE = join(ROOT, 'bench', '.cache');
const PARALLELISM = 8;

function flag(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
}
const ENGINES = flag('engines', 'postgres,pglite').split(',');
/** `--scale N`: N times the default set (edges, CAs and failover backends alike); `--edges` then sets the edges alone. */
const SCALE = Number(flag('scale', '1'));
if (!(SCALE >= 1 && Number.isInteger(SCALE))) throw new Error(`--scale takes a whole number ≥ 1, not ${flag('scale', '1')}`);
const SIZE: BenchSize = {
  ...FULL,
  edges: Number(flag('edges', String(FULL.edges * SCALE))),
  cas: FULL.cas * SCALE,
  backends: FULL.backends * SCALE,
};
const WATCH_RUNS = Number(flag('watch-runs', '20'));
/**
 * `--only noop`: apply once, then only the no-op plan rows (plan, list pages alone, replayed, CPU);
 * the raw creates, Markdown, per-object refresh, CLI process and watch rows are skipped. At
 * `--scale 10` that is the apply and a few minutes, instead of about an hour.
 */
const ONLY = flag('only', '');
if (ONLY && ONLY !== 'noop' && ONLY !== 'noop,watch' && ONLY !== 'apply') throw new Error(`--only takes noop, noop,watch or apply, not ${ONLY}`);
/** `--only apply`: the apply from empty and the raw creates, the rows a change of the create path moves. */
const APPLY_ONLY = ONLY === 'apply';
const NOOP_ONLY = ONLY !== '' && !APPLY_ONLY;
/** The watch row: in a whole run, and with `--only noop,watch`. */
const WATCH = !NOOP_ONLY || ONLY === 'noop,watch';
const NOOP_RUNS = 9;
/** Plan + fetch rounds run first and not counted: the process has just applied 6,200 objects, and
 *  the first plans still compile the planner's code (the steady state is what is compared). */
const NOOP_WARMUP = 2;
const PG_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
// Read once, above: the PostgreSQL engine opens PG_URL itself. Left set, the embedded engine's
// service thread would open PostgreSQL instead of PGlite (and the bench failed reading the state
// directory's credentials, which only the embedded database writes).
delete process.env.DATABASE_URL;

const now = () => performance.now();

/** `edgeplane serve` on a free port (logging warnings only, as the bench's requests are many). */
async function startServe(databaseUrl: string): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const a = probe.address();
      probe.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'edgeplane.js'), 'serve', '--port', String(port), '--log-level', 'warn'], {
    // No rate limit: the bench measures throughput, and at --scale 10 the apply and the raw creates
    // send more than the default 10,000 requests a minute (the apply then waits, the raw creates fail).
    env: { ...process.env, DATABASE_URL: databaseUrl, EDGEPLANE_RATE_LIMIT: '0' }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const closed = new Promise<void>((r) => child.on('close', () => r()));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await fetch(url);
      break;
    } catch {
      if (child.exitCode !== null || i > 600) throw new Error(`serve did not start: ${err}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, pid: child.pid!, stop: async () => { child.kill('SIGTERM'); await closed; } };
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const log = (s: string) => process.stderr.write(s + '\n');

/** Runs `fn` over `items` with at most `n` at once. */
async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

interface Account { key: string; accountId: string; keyId: string; client: ApiClient; stateDir?: string }

interface Engine {
  name: string;
  /** A fresh account and a client for it. */
  account(): Promise<Account>;
  /** How `edgeplane` (a process) reaches the account. */
  cli(acct: Account): Promise<{ args: string[]; env: Record<string, string> }>;
  /** The server's processes, when it runs apart from this one: `serve` and its PostgreSQL backends. */
  serverPids?(): Promise<{ serve: number[]; postgres: number[] }>;
  close(): Promise<void>;
}

async function engine(name: string): Promise<Engine> {
  if (name === 'postgres') {
    // A deployment: `edgeplane serve` as a process of its own on a database of its own, so the
    // reconciler's CPU (this process) and the service's are measured apart, as in real use.
    const database = 'ep_bench_rec_' + randomBytes(4).toString('hex');
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    const dbUrl = new URL(PG_URL);
    dbUrl.pathname = `/${database}`;
    const db = await openPostgres(dbUrl.toString(), { max: 2 });
    await migrate(db);
    const serve = await startServe(dbUrl.toString());
    const url = serve.url;
    return {
      name: 'PostgreSQL',
      async account() {
        const k = await createAccount(db, { name: 'bench' });
        return { key: k.api_key, accountId: k.account_id, keyId: k.key_id, client: new ApiClient(httpTransport(url, k.api_key)) };
      },
      async cli(acct) { return { args: [], env: { EDGEPLANE_API_URL: url, EDGEPLANE_API_KEY: acct.key } }; },
      async serverPids() {
        // The backends of serve's pool (the bench's own connections to the database idle meanwhile).
        const r = await admin.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]);
        return { serve: [serve.pid], postgres: r.rows.map((x: { pid: number }) => x.pid) };
      },
      async close() {
        await serve.stop();
        await db.close();
        await admin.query(`DROP DATABASE ${database}`);
        await admin.end();
      },
    };
  }
  // Embedded: exactly what the CLI runs (embeddedTransport: the service on a thread of its own over
  // PGlite on disk). Each account is the embedded account of a state directory of its own (the raw
  // replay's objects stay out of the planned account's lists, as in a second account).
  const dirs: string[] = [];
  const clients: ApiClient[] = [];
  return {
    name: 'embedded (PGlite)',
    async account() {
      const stateDir = mkdtempSync(join(tmpdir(), 'ep-bench-state-'));
      dirs.push(stateDir);
      const client = new ApiClient(await embeddedTransport(stateDir));
      clients.push(client);
      await client.send('GET', '/certificate_authorities?limit=1'); // started, and the account provisioned
      const c = readCredentials(stateDir)!;
      return { key: c.api_key, accountId: c.account_id, keyId: c.key_id, client, stateDir };
    },
    async cli(acct) {
      // The CLI opens the directory itself: release it (the key stays in its embedded.json).
      await acct.client.close();
      return { args: ['--state', acct.stateDir!], env: {} };
    },
    async close() {
      for (const c of clients) await c.close();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

/**
 * The plan's creates replayed with no DAG executor: dependency levels, each at the same
 * concurrency, each create with an Idempotency-Key as apply sends it (the service keeps the
 * response with the write: the same requests, the same server work).
 */
async function rawCreates(client: ApiClient, plan: Plan): Promise<number> {
  const run = randomBytes(6).toString('hex');
  const ids = new Map<string, string>();
  const level = new Map<string, number>();
  const byId = new Map(plan.steps.map((s) => [s.id, s]));
  const depth = (s: Step): number => level.get(s.id) ?? (level.set(s.id, s.dependsOn.reduce((m, d) => Math.max(m, depth(byId.get(d)!) + 1), 0)), level.get(s.id)!);
  const levels: Step[][] = [];
  for (const s of plan.steps) (levels[depth(s)] ??= []).push(s);
  const t0 = now();
  for (const steps of levels) {
    await pool(steps, PARALLELISM, async (s) => {
      const req = materializeRequest(s, ids, { value: () => '' });
      const res = await client.transport.request(req.method, req.path, req.body, req.method === 'POST' ? { 'idempotency-key': `raw-${run}-${s.id}` } : undefined);
      if (res.status >= 300) throw new Error(`${req.method} ${req.path}: ${res.status} ${JSON.stringify(res.body)}`);
      if (s.yields) ids.set(s.yields, (res.body as { id: string }).id);
    });
  }
  return now() - t0;
}

/** Every object read one GET at a time (the refresh a naive tool would do). */
/**
 * Above the default size only the default size's number of GETs is timed (evenly spread over the
 * objects), and the time scaled to all of them: 62,000 GETs would take most of the run, to show
 * what is already plain at 6,200.
 */
async function perObjectRefresh(client: ApiClient): Promise<{ ms: number; requests: number; timed: number }> {
  const lists = await readLiveState(client);
  const paths: string[] = [];
  for (const kind of manifestKinds()) {
    for (const o of lists[kind.listKey!] ?? []) {
      paths.push(`${collectionPath(kind, null)}/${o.id}`);
      for (const [field, child] of Object.entries(kind.embeds ?? {})) {
        for (const c of (o[field] as { id: string }[] | undefined) ?? []) paths.push(`${collectionPath(kindByName(child), o.id as string)}/${c.id}`);
      }
    }
  }
  const limit = objectCount(FULL);
  const timed = paths.length > limit ? paths.filter((_, i) => i % Math.ceil(paths.length / limit) === 0) : paths;
  const t0 = now();
  await pool(timed, PARALLELISM, async (p) => { await client.send('GET', p); });
  return { ms: (now() - t0) * (paths.length / timed.length), requests: paths.length, timed: timed.length };
}

/**
 * The no-op plan's own work: plans against the list pages as just read, replayed from memory (each
 * page's JSON text parsed again per request, as the transport does), so no server shares the
 * machine's cores while it runs. Against a server on the same two cores the same work takes
 * longer (bench/README.md): this row tells the reconciler's cost from that contention.
 */
async function replayedPlans(client: ApiClient, manifests: string, runs: number): Promise<number[]> {
  const pages = new Map<string, { status: number; headers: Record<string, string>; text: string }>();
  const live = client.transport;
  const recorder: Transport = {
    target: live.target,
    async request(method, path, body) {
      const res = await live.request(method, path, body);
      pages.set(path, { status: res.status, headers: res.headers, text: JSON.stringify(res.body) });
      return res;
    },
    close: async () => {},
  };
  await readLiveState(new ApiClient(recorder));
  const replay = new ApiClient({
    target: live.target,
    async request(method, path) {
      const page = pages.get(path);
      if (method !== 'GET' || !page) throw new Error(`not recorded: ${method} ${path}`);
      return { status: page.status, headers: page.headers, body: JSON.parse(page.text) };
    },
    close: async () => {},
  });
  const out: number[] = [];
  for (let i = 0; i < NOOP_WARMUP + runs; i++) {
    const t0 = now();
    const p = await preparePlan({ root: manifests, stack: 'bench', env: {} }, replay);
    if (i >= NOOP_WARMUP) out.push(now() - t0);
    if (p.plan!.steps.length) throw new Error(`replayed no-op plan has ${p.plan!.steps.length} steps`);
  }
  return out;
}

/** save → applied for a one-field change, `runs` times, through the watch session. */
async function watchLatency(client: ApiClient, dir: string, runs: number): Promise<number[]> {
  const reports: WatchReport[] = [];
  let wake: (() => void) | undefined;
  const session = startWatchSession({ input: { root: dir, stack: 'bench', env: {} }, client, report: (r) => { reports.push(r); wake?.(); } });
  const until = async (pred: (r: WatchReport) => boolean, from: number) => {
    while (!reports.slice(from).some(pred)) await new Promise<void>((r) => { wake = r; setTimeout(r, 50); });
  };
  await session.ready;
  await until((r) => r.type === 'run-end', 0);
  const file = join(dir, 'edges-00.yaml');
  const text = readFileSync(file, 'utf8');
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const mark = reports.length;
    const t0 = now();
    writeFileSync(file, text.replace('description: bench edge 0\n', `description: bench edge 0 v${i + 1}\n`));
    await until((r) => r.type === 'applied' && r.result.done.includes('HTTPSEdge/edge-0:update'), mark);
    out.push(now() - t0);
    await until((r) => r.type === 'run-end', mark);
    await session.idle();
  }
  await session.stop();
  return out;
}

/** Settings a user's environment may hold that would point the CLI elsewhere than `cli.env` says. */
const TARGET_ENV = ['DATABASE_URL', 'EDGEPLANE_API_URL', 'EDGEPLANE_API_KEY', 'EDGEPLANE_STATE'];
const CLI_RUNS = 3;

/**
 * `edgeplane plan DIR` as a process: wall time and peak RSS (/usr/bin/time -f %M, the CLI process
 * itself), median of CLI_RUNS runs (GC timing moves one run's peak by tens of MB). The engine's
 * `cli.env` alone says where it plans against: an inherited DATABASE_URL would make the "embedded"
 * CLI open PostgreSQL instead. Asynchronous: with PostgreSQL the service it calls runs in this
 * very process.
 */
async function cliPlan(dir: string, cli: { args: string[]; env: Record<string, string> }): Promise<{ ms: number; rssMb: number; rssRange: [number, number]; code: number | null }> {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: '1' };
  for (const k of TARGET_ENV) delete env[k];
  Object.assign(env, cli.env);
  const runs: { ms: number; rssMb: number; code: number | null }[] = [];
  for (let i = 0; i < CLI_RUNS; i++) runs.push(await cliPlanOnce(dir, cli.args, env));
  const rss = runs.map((r) => r.rssMb);
  return {
    ms: median(runs.map((r) => r.ms)),
    rssMb: median(rss),
    rssRange: [Math.min(...rss), Math.max(...rss)],
    code: runs.find((r) => r.code !== 0)?.code ?? 0,
  };
}

function cliPlanOnce(dir: string, args: string[], env: Record<string, string | undefined>): Promise<{ ms: number; rssMb: number; code: number | null }> {
  const t0 = now();
  const child = spawn('/usr/bin/time', ['-f', 'maxrss_kb=%M', process.execPath, join(ROOT, 'bin', 'edgeplane.js'), 'plan', dir, ...args, '--detailed-exitcode'], {
    env, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => {
    const ms = now() - t0;
    const m = /maxrss_kb=(\d+)/.exec(stderr);
    if (code !== 0) log(`edgeplane plan exited ${code}: ${stdout.slice(-500)} ${stderr.slice(-500)}`);
    resolve({ ms, rssMb: m ? Number(m[1]) / 1024 : NaN, code });
  }));
}

interface Row { engine: string; [k: string]: unknown }

/**
 * Apply from empty, then the same creates replayed raw in a second account. Only the figures come
 * back: the plans and results (two sets of 6,200 steps) are garbage before the no-op plans are
 * timed, as in any process that plans, instead of being marked by every full collection then.
 */
const RENDER_RUNS = 9;

interface RenderTimes { steps: number; comment_ms: number; whole_ms: number; comment_cpu_ms: number; whole_cpu_ms: number; comment_chars: number; whole_chars: number }

/**
 * `renderMarkdown` (the budgeted comment) and `renderMarkdownFull` of one plan, medians of
 * RENDER_RUNS: wall time, and this process's CPU time (a render is CPU alone: on a shared machine
 * the wall time also counts the waits for a core).
 */
function markdownTimes(plan: Plan): RenderTimes {
  const times = { comment: [] as number[], whole: [] as number[], commentCpu: [] as number[], wholeCpu: [] as number[] };
  const cpuMs = (since: NodeJS.CpuUsage) => { const u = process.cpuUsage(since); return (u.user + u.system) / 1000; };
  let chars = [0, 0];
  for (let i = 0; i < RENDER_RUNS; i++) {
    let [t, c] = [now(), process.cpuUsage()];
    const md = renderMarkdown(plan);
    times.comment.push(now() - t);
    times.commentCpu.push(cpuMs(c));
    [t, c] = [now(), process.cpuUsage()];
    const full = renderMarkdownFull(plan);
    times.whole.push(now() - t);
    times.wholeCpu.push(cpuMs(c));
    chars = [md.length, full.length];
  }
  const m = (xs: number[]) => +median(xs).toFixed(1);
  return { steps: plan.steps.length, comment_ms: m(times.comment), whole_ms: m(times.whole), comment_cpu_ms: m(times.commentCpu), whole_cpu_ms: m(times.wholeCpu), comment_chars: chars[0], whole_chars: chars[1] };
}

/** The manifests with every edge's and CA's description changed: a plan of that many updates. */
function describedAgain(manifests: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ep-bench-md-'));
  cpSync(manifests, dir, { recursive: true });
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.yaml') && x !== 'edgeplane.yaml')) {
    writeFileSync(join(dir, f), readFileSync(join(dir, f), 'utf8').replace(/^description: bench (.*)$/gm, 'description: bench $1, reviewed'));
  }
  return dir;
}

async function applyFromEmpty(eng: Engine, client: ApiClient, manifests: string, rawManifests: string): Promise<{ steps: number; applyMs: number; rawMs: number; markdown: RenderTimes | undefined }> {
  log('apply from empty…');
  const prepared = await preparePlan({ root: manifests, stack: 'bench', env: {} }, client);
  if (!prepared.plan) throw new Error(JSON.stringify(prepared.problems.slice(0, 5)));
  const plan = prepared.plan;
  log('Markdown of the plan from empty…');
  const markdown = NOOP_ONLY || APPLY_ONLY ? undefined : markdownTimes(plan);
  const t0 = now();
  const applied = await applyPlan(plan, { client, secrets: secretsFromMap(prepared.secrets), parallelism: PARALLELISM });
  const applyMs = now() - t0;
  if (applied.failed.length) throw new Error(`apply failed: ${JSON.stringify(applied.failed.slice(0, 3))}`);
  if (NOOP_ONLY) return { steps: plan.steps.length, applyMs, rawMs: NaN, markdown };

  log('raw creates (same requests, no executor)…');
  const rawAcct = await eng.account();
  // Hostports are unique service-wide: the replay uses manifests that differ only in hostports.
  const rawPlan = (await preparePlan({ root: rawManifests, stack: 'bench', env: {} }, rawAcct.client)).plan!;
  const rawMs = await rawCreates(rawAcct.client, rawPlan);
  return { steps: plan.steps.length, applyMs, rawMs, markdown };
}

async function benchEngine(name: string, manifests: string, rawManifests: string): Promise<Row> {
  log(`\n== ${name}`);
  const eng = await engine(name);
  try {
    const acct = await eng.account();
    const client = acct.client;

    const { steps, applyMs, rawMs, markdown: markdownCreates } = await applyFromEmpty(eng, client, manifests, rawManifests);
    if (APPLY_ONLY) return { engine: eng.name, objects: objectCount(SIZE), steps, apply_ms: Math.round(applyMs), raw_create_ms: Math.round(rawMs), apply_vs_raw: +(rawMs / applyMs).toFixed(2), skipped: 'all but the apply and the raw creates (--only apply)' };

    let markdownUpdates: RenderTimes | undefined;
    if (!NOOP_ONLY) {
      log('Markdown of a plan of description updates…');
      const described = describedAgain(manifests);
      const updates = await preparePlan({ root: described, stack: 'bench', env: {} }, client);
      rmSync(described, { recursive: true, force: true });
      if (!updates.plan?.steps.length) throw new Error('the plan of description updates has no steps');
      markdownUpdates = markdownTimes(updates.plan);
    }

    log('no-op plan…');
    // Plans and page fetches alternate, NOOP_RUNS of each after NOOP_WARMUP of each: the medians are compared.
    const plans: number[] = [];
    const fetches: number[] = [];
    let planRequests: Record<string, number> = {};
    // CPU of this process (the reconciler, and on the embedded engine the service too), all threads.
    const planCpu: number[] = [];
    const fetchCpu: number[] = [];
    const cpuMs = (since: NodeJS.CpuUsage) => { const u = process.cpuUsage(since); return (u.user + u.system) / 1000; };
    for (let i = 0; i < NOOP_WARMUP; i++) {
      await preparePlan({ root: manifests, stack: 'bench', env: {} }, client);
      await readLiveState(client);
    }
    // Where the plan's wall time goes on a shared machine: the planning thread on a core, or
    // runnable and waiting for one while the server's processes (and this one's other threads) hold
    // both; and what the server's processes spent meanwhile (summed over the runs: clock ticks).
    // PostgreSQL backends come and go with serve's pool: each reading lists them again, and a
    // backend counts from the first reading it is in (one that exits between readings is not seen).
    const servers = !!eng.serverPids && processesCpuMs([process.pid]) !== undefined;
    type Reading = Map<number, number>;
    const serverCpu = async (): Promise<Reading | undefined> => {
      if (!servers) return undefined;
      const { serve, postgres } = await eng.serverPids!();
      const r: Reading = new Map();
      for (const pid of serve) r.set(pid, processesCpuMs([pid]) ?? 0);
      for (const pid of postgres) r.set(-pid, processesCpuMs([pid]) ?? 0); // negative: PostgreSQL
      return r;
    };
    const share = { planRun: [] as number[], planWait: [] as number[], plan: { serve: 0, postgres: 0 }, fetch: { serve: 0, postgres: 0 } };
    const addServer = async (into: { serve: number; postgres: number }, before: Reading | undefined) => {
      const after = await serverCpu();
      if (!before || !after) return;
      for (const [pid, ms] of after) {
        // Less than before: the pid is a new process's (PostgreSQL reuses them), started since.
        const was = before.get(pid) ?? ms;
        const d = ms >= was ? ms - was : ms;
        if (pid < 0) into.postgres += d;
        else into.serve += d;
      }
    };
    // When the plan's last page came in: the plan's time is the pages' (slowed by what runs beside
    // them) and what it does after the last one (the diff).
    let lastPage = 0;
    const eachPage = client.eachPage;
    client.eachPage = (kind, parentId, onPage) => eachPage.call(client, kind, parentId, (items, etags) => {
      lastPage = now();
      onPage(items, etags);
    });
    const lastPageAt: number[] = [];
    const afterLastPage: number[] = [];
    for (let i = 0; i < NOOP_RUNS; i++) {
      for (const k of Object.keys(client.counts)) delete client.counts[k];
      const s0 = await serverCpu();
      const t0 = mainThreadTimes();
      const p0 = now();
      const c0 = process.cpuUsage();
      const noop = await preparePlan({ root: manifests, stack: 'bench', env: {} }, client);
      plans.push(now() - p0);
      lastPageAt.push(lastPage - p0);
      afterLastPage.push(now() - lastPage);
      planCpu.push(cpuMs(c0));
      const t1 = mainThreadTimes();
      if (t0 && t1) {
        share.planRun.push(t1.runMs - t0.runMs);
        share.planWait.push(t1.waitMs - t0.waitMs);
      }
      await addServer(share.plan, s0);
      planRequests = { ...client.counts };
      if (noop.plan!.steps.length) throw new Error(`no-op plan has ${noop.plan!.steps.length} steps: ${noop.plan!.steps.slice(0, 3).map((s) => s.id)}`);
      const s1 = await serverCpu();
      const f0 = now();
      const c1 = process.cpuUsage();
      await readLiveState(client);
      fetches.push(now() - f0);
      fetchCpu.push(cpuMs(c1));
      await addServer(share.fetch, s1);
    }
    client.eachPage = eachPage;
    const planMs = median(plans);
    const fetchMs = median(fetches);
    const kinds = manifestKinds().map((k) => ({ kind: k.name, objects: k.name === 'httpsEdge' ? SIZE.edges : k.name === 'certificateAuthority' ? SIZE.cas : SIZE.backends }));
    const noop = {
      plan_requests: planRequests,
      expected_list_requests: kinds.reduce((n, k) => n + Math.ceil(k.objects / PAGE_SIZE), 0),
      noop_plan_ms: Math.round(planMs),
      noop_plan_runs_ms: plans.map(Math.round),
      page_fetch_runs_ms: fetches.map(Math.round),
      page_fetch_ms: Math.round(fetchMs),
      noop_plan_cpu_ms: Math.round(median(planCpu)),
      page_fetch_cpu_ms: Math.round(median(fetchCpu)),
      noop_plan_thread_run_ms: share.planRun.length ? Math.round(median(share.planRun)) : null,
      noop_plan_thread_wait_ms: share.planWait.length ? Math.round(median(share.planWait)) : null,
      noop_plan_server_cpu_ms: servers ? { serve: Math.round(share.plan.serve / NOOP_RUNS), postgres: Math.round(share.plan.postgres / NOOP_RUNS) } : null,
      page_fetch_server_cpu_ms: servers ? { serve: Math.round(share.fetch.serve / NOOP_RUNS), postgres: Math.round(share.fetch.postgres / NOOP_RUNS) } : null,
      plan_vs_fetch: +(planMs / fetchMs).toFixed(2),
      noop_plan_last_page_ms: Math.round(median(lastPageAt)),
      noop_plan_after_last_page_ms: Math.round(median(afterLastPage)),
    };
    const replayed = await replayedPlans(client, manifests, NOOP_RUNS);
    let watchMs: number[] = [];
    if (WATCH) {
      log(`watch latency (${WATCH_RUNS} edits)…`);
      const watchDir = mkdtempSync(join(tmpdir(), 'ep-bench-watch-'));
      cpSync(manifests, watchDir, { recursive: true });
      watchMs = await watchLatency(client, watchDir, WATCH_RUNS);
      rmSync(watchDir, { recursive: true, force: true });
    }
    const watch = WATCH ? { watch_median_ms: Math.round(median(watchMs)), watch_min_ms: Math.round(Math.min(...watchMs)), watch_max_ms: Math.round(Math.max(...watchMs)) } : {};
    if (NOOP_ONLY) return { engine: eng.name, objects: objectCount(SIZE), steps, apply_ms: Math.round(applyMs), ...noop, noop_plan_replayed_ms: Math.round(median(replayed)), noop_plan_replayed_runs_ms: replayed.map(Math.round), ...watch, skipped: `raw creates, Markdown, per-object refresh, CLI process${WATCH ? '' : ', watch'} (--only ${ONLY})` };
    const refresh = await perObjectRefresh(client);
    // Put edge-0 back as the manifests say, for the CLI plan below.
    await preparePlan({ root: manifests, stack: 'bench', env: {} }, client).then((p) => applyPlan(p.plan!, { client, secrets: secretsFromMap(p.secrets) }));

    log('edgeplane plan as a process…');
    const cli = await cliPlan(manifests, await eng.cli(acct));

    return {
      engine: eng.name,
      objects: objectCount(SIZE),
      steps,
      apply_ms: Math.round(applyMs),
      raw_create_ms: Math.round(rawMs),
      apply_vs_raw: +(rawMs / applyMs).toFixed(2),
      ...noop,
      noop_plan_replayed_ms: Math.round(median(replayed)),
      noop_plan_replayed_runs_ms: replayed.map(Math.round),
      per_object_refresh_ms: Math.round(refresh.ms),
      per_object_refresh_requests: refresh.requests,
      per_object_refresh_timed: refresh.timed,
      cli_plan_ms: Math.round(cli.ms),
      cli_plan_peak_rss_mb: Math.round(cli.rssMb),
      cli_plan_peak_rss_range_mb: cli.rssRange.map(Math.round),
      cli_plan_exit: cli.code,
      markdown_creates: markdownCreates,
      markdown_updates: markdownUpdates,
      ...watch,
    };
  } finally {
    await eng.close();
  }
}

function table(rows: Row[]): string {
  /** Each row of the table: its label, and its cell for one engine's results. */
  let cells: [string, (r: Row) => string][] = [
    ['', (r) => String(r.engine)],
    ['objects (steps of apply from empty)', (r: Row) => `${r.objects} (${r.steps})`],
    ['apply from empty, parallelism 8', (r: Row) => `${(Number(r.apply_ms) / 1000).toFixed(1)} s`],
    ['same creates replayed raw, concurrency 8', (r: Row) => `${(Number(r.raw_create_ms) / 1000).toFixed(1)} s`],
    ['apply throughput / raw (target ≥ 0.80)', (r: Row) => String(r.apply_vs_raw)],
    ['no-op plan: requests (target: Σ ceil(N/100))', (r: Row) => `${JSON.stringify(r.plan_requests)} (${r.expected_list_requests})`],
    [`no-op plan, in-process, median of ${NOOP_RUNS} (after ${NOOP_WARMUP})`, (r: Row) => `${r.noop_plan_ms} ms (${(r.noop_plan_runs_ms as number[]).join(', ')})`],
    [`list pages alone, median of ${NOOP_RUNS}`, (r: Row) => `${r.page_fetch_ms} ms (${(r.page_fetch_runs_ms as number[]).join(', ')})`],
    [`plan / page fetch (target ≤ ${SCALE > 1 ? '1.3' : '1.5'})`, (r: Row) => String(r.plan_vs_fetch)],
    [`no-op plan: its last page in at / its work after that, medians of ${NOOP_RUNS}`, (r: Row) => `${r.noop_plan_last_page_ms} / ${r.noop_plan_after_last_page_ms} ms`],
    [`no-op plan against the same pages replayed from memory (no server), median of ${NOOP_RUNS}`, (r: Row) => `${r.noop_plan_replayed_ms} ms (${(r.noop_plan_replayed_runs_ms as number[]).join(', ')})`],
    [`CPU of the bench process: no-op plan / list pages alone, medians of ${NOOP_RUNS}`, (r: Row) => `${r.noop_plan_cpu_ms} / ${r.page_fetch_cpu_ms} ms`],
    [`no-op plan's planning thread: on a core / runnable, waiting for one, medians of ${NOOP_RUNS}`, (r: Row) => r.noop_plan_thread_run_ms === null ? 'n/a' : `${r.noop_plan_thread_run_ms} / ${r.noop_plan_thread_wait_ms} ms`],
    [`server's CPU (serve + PostgreSQL): per no-op plan / per list pages alone, mean of ${NOOP_RUNS}`, (r: Row) => {
      const p = r.noop_plan_server_cpu_ms as { serve: number; postgres: number } | null;
      const f = r.page_fetch_server_cpu_ms as { serve: number; postgres: number } | null;
      return p && f ? `${p.serve} + ${p.postgres} / ${f.serve} + ${f.postgres} ms` : 'in the bench process';
    }],
    ['one GET per object', (r: Row) => `${r.per_object_refresh_ms} ms (${r.per_object_refresh_requests} requests${r.per_object_refresh_timed === r.per_object_refresh_requests ? '' : `; ${r.per_object_refresh_timed} timed, scaled`})`],
    [`\`edgeplane plan\` process: wall, median of ${CLI_RUNS}`, (r: Row) => `${r.cli_plan_ms} ms (exit ${r.cli_plan_exit})`],
    [`\`edgeplane plan\` process: peak RSS, median of ${CLI_RUNS} (target ≤ 400 MB)`, (r: Row) => `${r.cli_plan_peak_rss_mb} MB (${(r.cli_plan_peak_rss_range_mb as number[]).join('–')})`],
    ...(['creates', 'updates'] as const).map((k) => [
      `Markdown render at ${objectCount(SIZE).toLocaleString('en-US')} objects, plan of ${k === 'creates' ? 'every create' : 'edge and CA description updates'}: comment / whole, wall (CPU), median of ${RENDER_RUNS}`,
      (r: Row) => {
        const m = r[`markdown_${k}`] as RenderTimes;
        return `${m.comment_ms} (${m.comment_cpu_ms}) / ${m.whole_ms} (${m.whole_cpu_ms}) ms (${m.steps} steps; ${m.comment_chars.toLocaleString('en-US')} / ${m.whole_chars.toLocaleString('en-US')} characters)`;
      },
    ] as [string, (r: Row) => string]),
    [`watch save → applied, median of ${WATCH_RUNS} (target ≤ 300 ms)`, (r: Row) => `${r.watch_median_ms} ms (min ${r.watch_min_ms}, max ${r.watch_max_ms})`],
  ];
  // `--only noop`: the rows it measured (the others' fields are absent).
  if (APPLY_ONLY) cells = cells.slice(0, 5);
  if (NOOP_ONLY) cells = cells.filter(([label], i) => i < 3 || /no-op plan|list pages|plan \/ page fetch|server's CPU/.test(label) || (WATCH && /^watch/.test(label)));
  const lines = cells.map(([label, cell]) => [label, ...rows.map(cell)]);
  const widths = lines[0].map((_, i) => Math.max(...lines.map((l) => l[i].length)));
  const fmt = (l: string[]) => `| ${l.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [fmt(lines[0]), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.slice(1).map(fmt)].join('\n');
}

async function main() {
  const started = new Date();
  const load = loadavg().map((x) => x.toFixed(2)).join(' ');
  const pems = caCertificates(SIZE.cas, join(CACHE, 'ca-certs.json'));
  const manifests = join(CACHE, `manifests-${SIZE.edges}-${SIZE.cas}`);
  const rawManifests = join(CACHE, `manifests-${SIZE.edges}-${SIZE.cas}-raw`);
  const rows: Row[] = [];
  for (const name of ENGINES) {
    writeManifests(manifests, SIZE, pems, randomBytes(3).toString('hex'));
    writeManifests(rawManifests, SIZE, pems, randomBytes(3).toString('hex'));
    rows.push(await benchEngine(name, manifests, rawManifests));
  }
  const out = table(rows);
  process.stdout.write(`\nedgeplane reconciler benchmark — ${started.toISOString()}, load average at start ${load}\n\n${out}\n`);
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  const file = flag('out', '') || join(ROOT, 'bench', 'results', `reconcile-${started.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ started, load_average: load, size: SIZE, parallelism: PARALLELISM, rows }, null, 2) + '\n');
  log(`\nresults: ${file}`);
}

await main();
