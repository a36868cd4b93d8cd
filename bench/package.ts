/**
 * `npm run bench:package`: what the installed package costs a user at the command line. Packs this
 * checkout (`prepack` builds dist/), installs the tarball globally into a scratch prefix, and times
 * each row as its own process under /usr/bin/time (wall time and peak RSS), median of `--runs N`
 * (default 5), against `node -e 0` measured in the same run: the ratio is the figure to compare.
 * The same commands run from the sources through tsx (the development loop, and how the package
 * ran before it shipped compiled JavaScript) are measured beside them.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tsxModuleUrl } from '../src/util/worker.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const runsAt = process.argv.indexOf('--runs');
const RUNS = runsAt > 0 ? Number(process.argv[runsAt + 1]) : 5;
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

const work = mkdtempSync(join(tmpdir(), 'edgeplane-bench-package-'));
const prefix = join(work, 'prefix');
execFileSync('npm', ['pack', '--pack-destination', work], { cwd: ROOT, stdio: 'ignore' });
execFileSync('npm', ['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', join(work, `edgeplane-${version}.tgz`)], { cwd: work, stdio: 'ignore' });
const bin = join(prefix, 'bin', 'edgeplane');
const fromSources = [process.execPath, '--import', tsxModuleUrl('.'), join(ROOT, 'src/cli/main.ts')];

interface Sample { ms: number; rssMb: number }
function measure(argv: string[], env: NodeJS.ProcessEnv = process.env): Sample {
  const t0 = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', 'maxrss_kb=%M', ...argv], { cwd: work, env, encoding: 'utf8' });
  const ms = performance.now() - t0;
  const kb = Number(/maxrss_kb=(\d+)/.exec(r.stderr)?.[1]);
  if (r.status !== 0 && r.status !== 2) throw new Error(`${argv.join(' ')} exited ${r.status}:\n${r.stderr}`);
  return { ms, rssMb: kb / 1024 };
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json') };
delete env.DATABASE_URL;
delete env.EDGEPLANE_API_URL;
const small = join(ROOT, 'examples/small');
const existing = join(work, 'existing-state');
execFileSync(bin, ['apply', small, '--auto-approve', '--state', existing], { cwd: work, env, stdio: 'ignore' });
const rows: [string, () => string[]][] = [
  ['node -e 0', () => [process.execPath, '-e', '0']],
  ['edgeplane --version (installed)', () => [bin, '--version']],
  ['edgeplane --version (sources, tsx)', () => [...fromSources, '--version']],
  // A fresh state directory each run: the embedded database is created, as on a first plan.
  ['plan examples/small (installed)', () => [bin, 'plan', small, '--state', mkdtempSync(join(work, 'st-'))]],
  ['plan examples/small (sources, tsx)', () => [...fromSources, 'plan', small, '--state', mkdtempSync(join(work, 'st-'))]],
  // A state directory that already holds the applied stack: the common second plan.
  ['plan examples/small, existing state (installed)', () => [bin, 'plan', small, '--state', existing]],
  ['validate examples/small (installed)', () => [bin, 'validate', small]],
  ['apply examples/small, new state (installed)', () => [bin, 'apply', small, '--auto-approve', '--state', mkdtempSync(join(work, 'st-'))]],
];

const load = loadavg()[0];
const results = rows.map(([name, argv]) => {
  measure(argv(), env); // warm the file cache
  const samples = Array.from({ length: RUNS }, () => measure(argv(), env));
  return { name, ms: median(samples.map((s) => s.ms)), rssMb: median(samples.map((s) => s.rssMb)) };
});
const base = results[0];
console.log(`\nbench:package — ${RUNS} runs per row, median; load average ${load.toFixed(2)} → ${loadavg()[0].toFixed(2)}\n`);
console.log('| row | wall ms | × node -e 0 | peak RSS MB | × node -e 0 |');
console.log('|---|---:|---:|---:|---:|');
for (const r of results) {
  console.log(`| ${r.name} | ${r.ms.toFixed(0)} | ${(r.ms / base.ms).toFixed(1)} | ${r.rssMb.toFixed(0)} | ${(r.rssMb / base.rssMb).toFixed(1)} |`);
}
rmSync(work, { recursive: true, force: true });
