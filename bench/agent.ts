/**
 * The sync agent's latency and idle cost (docs/agent.md), against `serve` on PostgreSQL
 * (DATABASE_URL, a private schema), with `edgeplane agent` as a real process on a local bare
 * repository:
 *
 *   webhook push → applied   a commit changing 5 of 50 objects, pushed, the webhook posted: the
 *                            time until the service's record says that commit is live (10 commits)
 *   poll → applied           the same with no webhook and a 5 s poll interval (5 commits)
 *   idle CPU                 6,200 objects (the reconciler bench's set) applied by the agent, then
 *                            the agent's own CPU over a 120 s window with a 60 s drift interval
 *
 *   npm run build && npx tsx bench/agent.ts [--idle-seconds 120]
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { caCertificates } from './ca-certs.js';
import { processesCpuMs } from './cpu-share.js';
import { FULL, objectCount, writeManifests } from './reconcile-manifests.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BIN = join(ROOT, 'bin', 'edgeplane.js');
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const IDLE_AT = process.argv.indexOf('--idle-seconds');
const IDLE_S = IDLE_AT > 0 ? Number(process.argv[IDLE_AT + 1]) : 120;
const SECRET = 'bench-secret';
const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@x', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@x' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', stdio: 'pipe' }).trim();
const log = (s: string) => process.stderr.write(s + '\n');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function backends(v: number, n = 50): string {
  return Array.from({ length: n }, (_, i) => `kind: FailoverBackend\nname: pool-${i}\ndescription: v${Math.floor((v + (i % 10)) / 10)}\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n`).join('---\n');
}

function start(args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ChildProcess; match: RegExpExecArray; out: () => string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    let done = false;
    const on = (d: Buffer) => {
      // serve logs every request: kept only until it is ready; the agent's lines are few.
      if (done && args[0] === 'serve') return;
      out += d;
      const m = done ? null : ready.exec(out);
      if (m) {
        done = true;
        resolve({ child, match: m, out: () => out });
      }
    };
    child.stdout!.on('data', on);
    child.stderr!.on('data', on);
    child.on('close', (code) => reject(new Error(`${args[0]} exited ${code}: ${out}`)));
  });
}

async function main(): Promise<void> {
  const schema = 'ep_bench_agent_' + randomBytes(4).toString('hex');
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const url = new URL(DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  const dbEnv = { ...process.env, DATABASE_URL: url.toString(), EDGEPLANE_RATE_LIMIT: '0' };
  const root = mkdtempSync(join(tmpdir(), 'ep-bench-agent-'));
  const children: ChildProcess[] = [];
  try {
    const created = execFileSync(process.execPath, [BIN, 'admin', 'accounts', 'create', '--name', 'bench', '--json'], { env: dbEnv, encoding: 'utf8' });
    const key = JSON.parse(created).api_key as string;
    const serve = await start(['serve', '--port', '0'], dbEnv, /"url":"(http[^"]+)"/);
    children.push(serve.child);
    const api = serve.match[1];
    const agentEnv = { ...process.env, EDGEPLANE_API_URL: api, EDGEPLANE_API_KEY: key, HOOK: SECRET, DATABASE_URL: undefined };
    const headers = { authorization: `Bearer ${key}`, 'service-version': '2' };
    const live = async (stack: string) => {
      const r = await fetch(`${api}/stacks/${stack}`, { headers });
      return r.ok ? ((await r.json()) as { live_commit: { sha: string } | null }).live_commit?.sha : undefined;
    };
    const until = async (stack: string, sha: string, t0: number, limitMs = 120_000) => {
      while ((await live(stack)) !== sha) {
        if (Date.now() - t0 > limitMs) throw new Error(`${sha} not live after ${limitMs} ms`);
        await sleep(20);
      }
      return Date.now() - t0;
    };

    const bare = join(root, 'repo.git');
    const work = join(root, 'work');
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    execFileSync('git', ['clone', '-q', bare, work], { stdio: 'pipe' });
    git(work, 'checkout', '-q', '-B', 'main');
    mkdirSync(join(work, 'small'));
    const push = (files: Record<string, string>, msg: string) => {
      for (const [f, t] of Object.entries(files)) writeFileSync(join(work, f), t);
      git(work, 'add', '-A');
      git(work, 'commit', '-q', '-m', msg);
      git(work, 'push', '-q', 'origin', 'main');
      return git(work, 'rev-parse', 'HEAD');
    };
    const agent = async (path: string, interval: string, drift: string, hook: boolean) => {
      const a = await start(['agent', '--repo', bare, '--path', path, '--interval', interval, '--drift-interval', drift, '--port', '0', ...(hook ? ['--webhook-secret-env', 'HOOK'] : [])], agentEnv, /edgeplane agent on (http:\/\/\S+) /);
      children.push(a.child);
      return a;
    };
    const stop = async (c: ChildProcess) => {
      c.kill('SIGTERM');
      await new Promise((r) => c.once('close', r));
    };

    // Webhook push → applied.
    log('webhook rows');
    let sha = push({ 'small/edgeplane.yaml': 'stack: small\n', 'small/all.yaml': backends(0) }, 'v0');
    let a = await agent('small', '60s', '10m', true);
    await until('small', sha, Date.now());
    const hook: number[] = [];
    for (let v = 1; v <= 10; v++) {
      sha = push({ 'small/all.yaml': backends(v) }, `v${v}`);
      const body = JSON.stringify({ ref: 'refs/heads/main', after: sha });
      const t0 = Date.now();
      const r = await fetch(`${a.match[1]}/hooks/git`, { method: 'POST', body, headers: { 'x-github-event': 'push', 'x-hub-signature-256': 'sha256=' + createHmac('sha256', SECRET).update(body).digest('hex') } });
      if (r.status !== 202) throw new Error(`webhook: ${r.status}`);
      hook.push(await until('small', sha, t0));
    }
    await stop(a.child);

    log(`webhook: ${hook.join(' ')}`);
    // Poll 5 s → applied.
    a = await agent('small', '5s', '10m', false);
    await sleep(1000);
    const poll: number[] = [];
    for (let v = 11; v <= 15; v++) {
      await sleep(Math.random() * 5000);
      sha = push({ 'small/all.yaml': backends(v) }, `v${v}`);
      poll.push(await until('small', sha, Date.now()));
    }
    await stop(a.child);

    log(`poll: ${poll.join(' ')}`);
    // Idle CPU at 6,200 objects, drift interval 60 s.
    const big = join(work, 'big');
    writeManifests(big, FULL, caCertificates(FULL.cas, join(ROOT, 'bench', '.cache', 'ca-certs.json')), 'agent');
    sha = push({}, 'big');
    const t0 = Date.now();
    a = await agent('big', '60s', '60s', false);
    const firstMs = await until('bench', sha, t0, 600_000);
    log(`first sync of the big stack: ${firstMs} ms`);
    await sleep(5000);
    const pid = a.child.pid!;
    const cpu0 = processesCpuMs([pid])!;
    const w0 = Date.now();
    await sleep(IDLE_S * 1000);
    const idlePct = ((processesCpuMs([pid])! - cpu0) / (Date.now() - w0)) * 100;
    const checks = (a.out().match(/stack bench: interval/g) ?? []).length;
    await stop(a.child);

    const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    const fmt = (xs: number[]) => `median ${(med(xs) / 1000).toFixed(2)} s, max ${(Math.max(...xs) / 1000).toFixed(2)} s`;
    console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    console.log('| row | figure | target |');
    console.log('|---|---|---|');
    console.log(`| webhook push → applied, 50 objects (5 change), 10 commits | ${fmt(hook)} | ≤ 2 s |`);
    console.log(`| poll every 5 s → applied, 5 commits pushed at random times | ${fmt(poll)} | ≤ 7 s |`);
    console.log(`| agent's CPU while idle, ${objectCount(FULL).toLocaleString('en')} objects, drift check every 60 s (${IDLE_S} s window, ${checks} drift checks logged) | ${idlePct.toFixed(2)} % of a core | ≤ 2 % |`);
    console.log(`| first sync of the ${objectCount(FULL).toLocaleString('en')} objects (fetch, plan, apply, record) | ${(firstMs / 1000).toFixed(1)} s | |`);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await admin.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {});
    await admin.end();
    rmSync(root, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => {
  log(String(err?.stack ?? err));
  process.exit(1);
});
