/**
 * API throughput benchmark: `npm run bench:api [-- flags]`. See bench/README.md.
 *
 * The service runs in this process (buildApp + listen, logging silent); the load generator runs
 * in a child process, because PGlite's WASM shares this process's event loop with the server.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/service/app.js';
import { createAccount } from '../src/service/auth.js';
import type { Db } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';
import { openPglite } from '../src/store/pglite.js';
import { openPostgres } from '../src/store/postgres.js';
import { startBaselines, urlOf } from './baselines.js';
import { measureListFetch, type ListFetchResult } from './list-scale.js';
import { runLoad, type LoadOptions, type LoadResult, type LoadTarget } from './load.js';
import { RSA_CA, SCENARIOS, type LoadSpec, type Scenario, type ScenarioOp, type SeedClient } from './scenarios.js';

type Engine = 'pglite' | 'postgres';
const TARGET_PCT = 75;
/** PostgreSQL's CPU per full list fetch at ten times the objects: at most this many times. */
const LIST_CPU_MAX_RATIO = 12;
const LIST_ROW = 'full list fetch';
const RESULTS_DIR = new URL('./results/', import.meta.url);

interface Options extends LoadOptions {
  engines: Engine[];
  databaseUrl: string;
  only?: string;
  rounds: number;
}

interface Row {
  name: string;
  op: ScenarioOp | 'baseline-constant' | 'baseline-select' | 'baseline-prepared';
  heldToTarget: boolean;
  method: string;
  path: string;
  result: LoadResult;
  /** req/s as a percentage of the bare-select baseline on the same engine (median over rounds). */
  pctOfSelect: number | null;
  /** The same against the prepared-select baseline. */
  pctOfPrepared: number | null;
  rpsPerRound: number[];
  /** The % select target of a `get` row held to one, on this engine. */
  targetPct?: number;
  /** Highest RSS of this process sampled during the row's run (warm-up included), MiB. */
  rssPeakMiB: number;
}

interface EngineReport {
  engine: Engine;
  target: string;
  rows: Row[];
  getVsSelect: { name: string; pct: number; pctOfPrepared: number; target: number; meetsTarget: boolean }[];
  /** Paired rows (the same request in a small and a large account): small req/s over large, median over rounds. */
  pairs: { name: string; ratio: number; maxRatio: number; meetsTarget: boolean }[];
  /** Whether the objects table had planner statistics at the end (the rows assume it never had). */
  analysed: boolean;
  rssPeakMiB: number;
  /** 1-minute load average before and after the engine's runs: other work on the machine skews every figure. */
  loadAvg: { before: number; after: number };
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', short: 'd' },
      connections: { type: 'string', short: 'c' },
      warmup: { type: 'string', short: 'w' },
      engines: { type: 'string', short: 'e' },
      only: { type: 'string' },
      rounds: { type: 'string', short: 'r' },
      loadgen: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(`npm run bench:api -- [-d SEC] [-c CONNS] [-w SEC] [-r ROUNDS] [-e pglite,postgres] [--only TEXT] [--loadgen child|inprocess]
env: BENCH_DURATION (5), BENCH_CONNECTIONS (10), BENCH_WARMUP (1), BENCH_ROUNDS (1),
     BENCH_ENGINES (pglite,postgres), BENCH_LOADGEN (child), DATABASE_URL (postgres://postgres@127.0.0.1:5432/test)`);
    process.exit(0);
  }
  const num = (flag: string | undefined, env: string, def: number) => {
    const raw = flag ?? process.env[env];
    const n = raw === undefined ? def : Number(raw);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${env}: not a number: ${raw}`);
    return n;
  };
  const engines = (values.engines ?? process.env.BENCH_ENGINES ?? 'pglite,postgres').split(',').map((e) => e.trim()).filter(Boolean);
  for (const e of engines) if (e !== 'pglite' && e !== 'postgres') throw new Error(`unknown engine ${e}: pglite or postgres`);
  const loadgen = values.loadgen ?? process.env.BENCH_LOADGEN ?? 'child';
  if (loadgen !== 'child' && loadgen !== 'inprocess') throw new Error(`--loadgen: child or inprocess, not ${loadgen}`);
  return {
    duration: num(values.duration, 'BENCH_DURATION', 5),
    connections: num(values.connections, 'BENCH_CONNECTIONS', 10),
    warmup: num(values.warmup, 'BENCH_WARMUP', 1),
    engines: engines as Engine[],
    databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    only: values.only,
    rounds: Math.max(1, Math.round(num(values.rounds, 'BENCH_ROUNDS', 1))),
    loadgen,
  };
}

/** Highest RSS seen since the last `reset`, sampled often enough to catch a run's peak. */
class RssSampler {
  private peak = 0;
  private readonly timer = setInterval(() => this.sample(), 50);
  sample() {
    this.peak = Math.max(this.peak, process.memoryUsage.rss());
  }
  reset() {
    this.peak = 0;
    this.sample();
  }
  peakMiB() {
    this.sample();
    return mib(this.peak);
  }
  stop() {
    clearInterval(this.timer);
  }
}

const mib = (bytes: number) => Math.round(bytes / 1024 / 1024);

async function openEngine(engine: Engine, opts: Options): Promise<{ db: Db; dispose(): Promise<void> }> {
  if (engine === 'pglite') {
    // On disk in a scratch directory, as `serve` runs it.
    const dir = mkdtempSync(join(tmpdir(), 'edgeplane-bench-'));
    const db = await openPglite(dir);
    return { db, dispose: async () => { await db.close(); rmSync(dir, { recursive: true, force: true }); } };
  }
  const schema = 'ep_bench_' + randomBytes(6).toString('hex');
  const db = await openPostgres(opts.databaseUrl, { schema });
  return {
    db,
    dispose: async () => {
      try {
        // Handlers of requests whose load-generator connection was cut can still be mid-transaction
        // after app.close(); a DROP racing them may be picked as a deadlock victim: try again.
        for (let attempt = 1; ; attempt++) {
          try {
            await db.query(`DROP SCHEMA ${schema} CASCADE`);
            break;
          } catch (err) {
            if ((err as { code?: string }).code !== '40P01' || attempt >= 5) throw err;
            await new Promise((r) => setTimeout(r, 200 * attempt));
          }
        }
      } finally {
        await db.close();
      }
    },
  };
}

/** A seeding client for one new account on the service. */
async function seedClient(db: Db, baseUrl: string): Promise<{ api: SeedClient; headers: Record<string, string> }> {
  const { api_key } = await createAccount(db, { name: 'bench' });
  const headers = { authorization: `Bearer ${api_key}`, 'service-version': '2' };
  const call = async (method: string, path: string, body: unknown, status: number) => {
    const res = await fetch(baseUrl + path, {
      method,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== status) throw new Error(`seeding ${method} ${path}: expected ${status}, got ${res.status}: ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : undefined;
  };
  return {
    headers,
    api: {
      post: (path, body, status = 201) => call('POST', path, body, status),
      put: (path, body, status = 200) => call('PUT', path, body, status),
      get: (path, status = 200) => call('GET', path, undefined, status),
    },
  };
}

function targetOf(baseUrl: string, spec: LoadSpec, account: Record<string, string>): LoadTarget {
  const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
  const headers = { ...account, ...spec.headers };
  return {
    url: baseUrl + spec.path,
    method: spec.method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body,
    uniqueIds: spec.uniqueIds,
  };
}

/** One request by hand first: a run of 404s or 401s would measure the wrong thing. */
async function checkOnce(target: LoadTarget, status: number): Promise<void> {
  const res = await fetch(target.url, { method: target.method, headers: target.headers, body: target.body });
  const text = await res.text();
  if (res.status !== status) throw new Error(`${target.method} ${target.url}: expected ${status}, got ${res.status}: ${text.slice(0, 300)}`);
}

async function benchEngine(engine: Engine, opts: Options, rss: RssSampler): Promise<EngineReport> {
  const loadBefore = round1(loadavg()[0]);
  const { db, dispose } = await openEngine(engine, opts);
  let app: FastifyInstance | undefined;
  let baselines: Awaited<ReturnType<typeof startBaselines>> | undefined;
  const engineRss = { peak: 0 };
  try {
    await migrate(db);
    // A fresh deployment whose tables were never analysed, for the whole run: autovacuum would
    // analyse the table a minute after the seeding. (PGlite runs no autovacuum.)
    if (engine === 'postgres') await db.query('ALTER TABLE objects SET (autovacuum_enabled = false)');
    app = await buildApp({ db, logLevel: 'silent' });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const serviceUrl = urlOf(app);

    // The select baseline returns the very row a GET of a CA reads.
    const { api } = await seedClient(db, serviceUrl);
    const ca = await api.post('/certificate_authorities', { description: 'bench CA 0', metadata: '{"team":"bench"}', ca_pem: RSA_CA });
    baselines = await startBaselines(db, ca.id);

    interface Planned {
      name: string; op: Row['op']; heldToTarget?: boolean; targetPct?: number; pair?: Scenario['pair'];
      target: LoadTarget; path: string; runs: LoadResult[]; rssPeakMiB: number;
    }
    const planned: Planned[] = [
      { name: 'baseline: bare fastify, constant', op: 'baseline-constant', target: { url: baselines.url + baselines.constantPath, method: 'GET', headers: {} }, path: `GET ${baselines.constantPath}`, runs: [], rssPeakMiB: 0 },
      { name: 'baseline: bare fastify, 1 PK select', op: 'baseline-select', target: { url: baselines.url + baselines.selectPath, method: 'GET', headers: {} }, path: `GET ${baselines.selectPath}`, runs: [], rssPeakMiB: 0 },
      { name: 'baseline: bare fastify, 1 PK select, prepared', op: 'baseline-prepared', target: { url: baselines.url + baselines.preparedPath, method: 'GET', headers: {} }, path: `GET ${baselines.preparedPath}`, runs: [], rssPeakMiB: 0 },
    ];
    for (const p of planned) await checkOnce(p.target, 200);
    for (const scenario of SCENARIOS) {
      if (opts.only && !scenario.name.includes(opts.only)) continue;
      const { api: scoped, headers } = await seedClient(db, serviceUrl);
      const spec = await scenario.setup(scoped);
      const target = targetOf(serviceUrl, spec, headers);
      await checkOnce(target, spec.status);
      planned.push({
        name: scenario.name, op: scenario.op, heldToTarget: scenario.heldToTarget, targetPct: scenario.targetPct?.[engine] ?? TARGET_PCT,
        pair: scenario.pair, target, path: `${spec.method} ${spec.path}`, runs: [], rssPeakMiB: 0,
      });
    }

    // Rounds run every row in turn, so a row and the select baseline it is compared with are
    // measured close together; the median round counts (other load on the machine comes and goes).
    for (let round = 1; round <= opts.rounds; round++) {
      for (const p of planned) {
        process.stdout.write(`  ${engine}${opts.rounds > 1 ? ` round ${round}` : ''} · ${p.name} … `);
        rss.reset();
        const result = await runLoad(p.target, opts);
        p.rssPeakMiB = Math.max(p.rssPeakMiB, rss.peakMiB());
        engineRss.peak = Math.max(engineRss.peak, p.rssPeakMiB);
        p.runs.push(result);
        const failures = result.non2xx + result.errors + result.timeouts;
        console.log(`${Math.round(result.rps)} req/s${failures ? `  (${failures} failed responses!)` : ''}`);
      }
    }

    const select = planned.find((p) => p.op === 'baseline-select')!;
    const prepared = planned.find((p) => p.op === 'baseline-prepared')!;
    /** Median over rounds of the per-round ratio of req/s, in %. */
    const pctOf = (p: Planned, base: Planned) => {
      const pcts = p.runs.map((r, i) => (r.rps / base.runs[i].rps) * 100).sort((a, b) => a - b);
      return round1(pcts[Math.floor((pcts.length - 1) / 2)]);
    };
    const rows: Row[] = planned.map((p) => {
      const ranked = [...p.runs].sort((a, b) => a.rps - b.rps);
      const result = ranked[Math.floor((ranked.length - 1) / 2)];
      return {
        name: p.name, op: p.op, heldToTarget: p.op === 'get' && p.heldToTarget !== false, method: p.target.method, path: p.path, result,
        pctOfSelect: pctOf(p, select),
        pctOfPrepared: pctOf(p, prepared),
        rpsPerRound: p.runs.map((r) => Math.round(r.rps)),
        targetPct: p.targetPct,
        rssPeakMiB: p.rssPeakMiB,
      };
    });
    const getVsSelect = rows
      .filter((r) => r.heldToTarget)
      .map((r) => ({ name: r.name, pct: r.pctOfSelect!, pctOfPrepared: r.pctOfPrepared!, target: r.targetPct!, meetsTarget: r.pctOfSelect! >= r.targetPct! }));
    const pairs: EngineReport['pairs'] = [];
    for (const small of planned.filter((p) => p.pair?.role === 'small')) {
      const large = planned.find((p) => p.pair?.role === 'large' && p.pair.name === small.pair!.name);
      if (!large) continue;
      const ratios = small.runs.map((r, i) => r.rps / large.runs[i].rps).sort((a, b) => a - b);
      const ratio = Math.round(ratios[Math.floor((ratios.length - 1) / 2)] * 100) / 100;
      pairs.push({ name: small.pair!.name, ratio, maxRatio: small.pair!.maxRatio, meetsTarget: ratio <= small.pair!.maxRatio });
    }
    const { rows: stats } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'objects'`);
    return {
      engine, target: db.describe, rows, getVsSelect, pairs, analysed: stats[0].n > 0,
      rssPeakMiB: engineRss.peak, loadAvg: { before: loadBefore, after: round1(loadavg()[0]) },
    };
  } finally {
    await baselines?.close().catch(() => {});
    await app?.close();
    await dispose();
  }
}

const round1 = (n: number) => Math.round(n * 10) / 10;

function printTable(report: EngineReport) {
  const header = ['scenario', 'req/s', '% select', 'CPU µs/req', 'p50 ms', 'p99 ms', 'non-2xx', 'RSS MiB'];
  const body = report.rows.map((r) => [
    r.name,
    String(Math.round(r.result.rps)),
    r.pctOfSelect === null ? '' : `${r.pctOfSelect}%`,
    String(r.result.serverCpuUsPerReq),
    String(r.result.latencyMs.p50),
    String(r.result.latencyMs.p99),
    String(r.result.non2xx + r.result.errors + r.result.timeouts),
    String(r.rssPeakMiB),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(`\n${report.engine} — ${report.target} — load average ${report.loadAvg.before} → ${report.loadAvg.after} on ${cpus().length} CPUs`);
  console.log(line(header));
  console.log(widths.map((w) => '─'.repeat(w)).join('  '));
  for (const b of body) console.log(line(b));
  for (const g of report.getVsSelect) {
    console.log(`${g.meetsTarget ? 'OK   ' : 'BELOW'} ${g.name}: ${g.pct}% of the bare select (target ≥ ${g.target}%); ${g.pctOfPrepared}% of it prepared`);
  }
  for (const p of report.pairs) {
    console.log(`${p.meetsTarget ? 'OK   ' : 'ABOVE'} ${p.name}: ${p.ratio}× (target ≤ ${p.maxRatio}×${report.analysed ? '; the table was analysed meanwhile' : ', never analysed'})`);
  }
}

function gitCommit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

async function main() {
  const opts = parseOptions();
  const rss = new RssSampler();
  const meta = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    connections: opts.connections,
    durationSec: opts.duration,
    warmupSec: opts.warmup,
    rounds: opts.rounds,
    loadgen: opts.loadgen,
    targetPct: TARGET_PCT,
  };
  console.log(`edgeplane API bench: ${opts.connections} connections, ${opts.warmup} s warm-up + ${opts.duration} s per row, ${opts.rounds} round(s), load generator: ${opts.loadgen}`);
  if (loadavg()[0] > cpus().length / 2) {
    console.log(`warning: load average ${round1(loadavg()[0])} on ${cpus().length} CPUs: other work will skew the figures; use --rounds 3 or run on a quiet machine`);
  }
  const reports: EngineReport[] = [];
  let failed = false;
  for (const engine of opts.engines) {
    try {
      reports.push(await benchEngine(engine, opts, rss));
    } catch (err) {
      failed = true;
      console.error(`\n${engine}: benchmark failed: ${(err as Error).message}`);
    }
  }
  let listFetch: { sizes: ListFetchResult[]; ratio: number; meetsTarget: boolean } | undefined;
  if (opts.engines.includes('postgres') && (!opts.only || LIST_ROW.includes(opts.only))) {
    try {
      const sizes: ListFetchResult[] = [];
      // Rounds enough that clock ticks of 10 ms are a small part of each figure.
      for (const [scale, rounds] of [[1, 10], [10, 3]]) {
        process.stdout.write(`  postgres · ${LIST_ROW}, ${scale * 6200} objects, never analysed … `);
        const r = await measureListFetch(opts.databaseUrl, scale, rounds);
        console.log(`${r.pgCpuMs} ms of PostgreSQL CPU, ${r.wallMs} ms wall`);
        sizes.push(r);
      }
      const ratio = Math.round((sizes[1].pgCpuMs / sizes[0].pgCpuMs) * 10) / 10;
      listFetch = { sizes, ratio, meetsTarget: ratio <= LIST_CPU_MAX_RATIO };
    } catch (err) {
      failed = true;
      console.error(`\n${LIST_ROW}: benchmark failed: ${(err as Error).message}`);
    }
  }
  rss.stop();
  const processPeakMiB = Math.round(process.resourceUsage().maxRSS / 1024);
  mkdirSync(RESULTS_DIR, { recursive: true });
  for (const report of reports) {
    printTable(report);
    const file = new URL(`api-${report.engine}.json`, RESULTS_DIR);
    const extra = report.engine === 'postgres' && listFetch ? { listFetch } : {};
    writeFileSync(file, JSON.stringify({ ...meta, ...report, ...extra, processPeakRssMiB: processPeakMiB }, null, 2) + '\n');
  }
  if (listFetch) {
    console.log(`\npostgres — ${LIST_ROW} (every page of edges with routes, CAs, failover backends), never analysed`);
    for (const r of listFetch.sizes) {
      console.log(`  ${String(r.objects).padStart(6)} objects, ${String(r.pages).padStart(3)} requests: ${r.pgCpuMs} ms PostgreSQL CPU, ${r.wallMs} ms wall (mean of ${r.rounds})${r.analysed ? ' — the table was analysed meanwhile!' : ''}`);
    }
    console.log(`${listFetch.meetsTarget ? 'OK   ' : 'ABOVE'} PostgreSQL CPU per ${LIST_ROW}, ${listFetch.sizes[1].objects} vs ${listFetch.sizes[0].objects} objects: ${listFetch.ratio}× (target ≤ ${LIST_CPU_MAX_RATIO}×)`);
  }
  console.log(`\npeak RSS of this process (service + database engine in process): ${processPeakMiB} MiB`);
  for (const r of reports) console.log(`  during ${r.engine} runs: ${r.rssPeakMiB} MiB`);
  console.log(`results: ${reports.map((r) => `bench/results/api-${r.engine}.json`).join(', ')}`);
  if (failed) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
