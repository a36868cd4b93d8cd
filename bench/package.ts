/**
 * `npm run bench:package`: what the installed package costs a user at the command line. Packs this
 * checkout (`prepack` builds dist/), installs the tarball globally into a scratch prefix, and times
 * each row as its own process under /usr/bin/time (wall time and peak RSS), median of `--runs N`
 * (default 5), against `node -e 0` measured in the same run: the ratio is the figure to compare.
 * The same commands run from the sources through tsx (the development loop, and how the package
 * ran before it shipped compiled JavaScript) are measured beside them.
 *
 * `--base REF`: the package of commit REF is packed and installed too (its files from `git archive`,
 * this tree's node_modules linked in, or REF's own installed when the lockfiles differ), and each
 * row runs both, alternately (REF, this, this, REF, …): the previous version measured in the same
 * minutes, under the same load. Printed beside the ratios: this ÷ REF per row.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tsxModuleUrl } from '../src/util/worker.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const flag = (name: string) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1] : undefined;
};
const RUNS = Number(flag('runs') ?? 5);
const BASE = flag('base');

const work = mkdtempSync(join(tmpdir(), 'edgeplane-bench-package-'));

/** The package of the checkout at `tree`, packed and installed into a prefix of its own: its `edgeplane`. */
function install(tree: string, name: string): string {
  const { version } = JSON.parse(readFileSync(join(tree, 'package.json'), 'utf8')) as { version: string };
  const out = join(work, `${name}-pack`);
  execFileSync('mkdir', ['-p', out]);
  execFileSync('npm', ['pack', '--pack-destination', out], { cwd: tree, stdio: 'ignore' });
  const prefix = join(work, `${name}-prefix`);
  execFileSync('npm', ['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', join(out, `edgeplane-${version}.tgz`)], { cwd: work, stdio: 'ignore' });
  return join(prefix, 'bin', 'edgeplane');
}

/** REF's files in a scratch directory, with this tree's node_modules (or its own, when its lockfile differs). */
function checkout(ref: string): string {
  const dir = join(work, 'base-tree');
  execFileSync('mkdir', ['-p', dir]);
  execFileSync('sh', ['-c', `git archive --format=tar ${JSON.stringify(ref)} | tar -x -C ${JSON.stringify(dir)}`], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  const lock = (d: string) => readFileSync(join(d, 'package-lock.json'), 'utf8');
  if (lock(ROOT) === lock(dir)) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  else execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  return dir;
}

const bin = install(ROOT, 'this');
const baseCommit = BASE ? execFileSync('git', ['rev-parse', '--short', `${BASE}^{commit}`], { cwd: ROOT, encoding: 'utf8' }).trim() : undefined;
const baseBin = BASE ? install(checkout(BASE), 'base') : undefined;
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
/** A state directory that already holds the applied stack, made by `edgeplane`: the common second plan. */
const existingFor = (edgeplane: string, name: string) => {
  const dir = join(work, `existing-state-${name}`);
  execFileSync(edgeplane, ['apply', small, '--auto-approve', '--state', dir], { cwd: work, env, stdio: 'ignore' });
  return dir;
};

/** A row: its command line for an installed `edgeplane` (and its state directory), or one command line (`null`: not per package). */
type Row = [name: string, argv: (edgeplane: string, existing: string) => string[], perPackage: boolean];
const rows: Row[] = [
  ['node -e 0', () => [process.execPath, '-e', '0'], false],
  ['edgeplane --version (installed)', (b) => [b, '--version'], true],
  ['edgeplane --version (sources, tsx)', () => [...fromSources, '--version'], false],
  // A fresh state directory each run: the embedded database is created, as on a first plan.
  ['plan examples/small (installed)', (b) => [b, 'plan', small, '--state', mkdtempSync(join(work, 'st-'))], true],
  ['plan examples/small (sources, tsx)', () => [...fromSources, 'plan', small, '--state', mkdtempSync(join(work, 'st-'))], false],
  ['plan examples/small, existing state (installed)', (b, existing) => [b, 'plan', small, '--state', existing], true],
  ['validate examples/small (installed)', (b) => [b, 'validate', small], true],
  ['apply examples/small, new state (installed)', (b) => [b, 'apply', small, '--auto-approve', '--state', mkdtempSync(join(work, 'st-'))], true],
];

const sides = [{ name: 'this', bin, existing: existingFor(bin, 'this') }, ...(baseBin ? [{ name: 'base', bin: baseBin, existing: existingFor(baseBin, 'base') }] : [])];
const load = loadavg()[0];
const results = rows.map(([name, argv, perPackage]) => {
  const runs = perPackage ? sides : sides.slice(0, 1);
  const samples: Record<string, Sample[]> = {};
  for (const s of runs) measure(argv(s.bin, s.existing), env); // warm the file cache
  for (let i = 0; i < RUNS; i++) {
    // Alternating, and each side first in every other round.
    for (const s of i % 2 === 0 ? runs : [...runs].reverse()) (samples[s.name] ??= []).push(measure(argv(s.bin, s.existing), env));
  }
  const of = (side: string) => samples[side] && { ms: median(samples[side].map((s) => s.ms)), rssMb: median(samples[side].map((s) => s.rssMb)) };
  return { name, here: of('this')!, base: of('base') };
});
const node = results[0].here;
console.log(`\nbench:package — ${RUNS} runs per row, median; load average ${load.toFixed(2)} → ${loadavg()[0].toFixed(2)}${baseCommit ? `; against ${BASE} (${baseCommit}), alternating` : ''}\n`);
if (!baseCommit) {
  console.log('| row | wall ms | × node -e 0 | peak RSS MB | × node -e 0 |');
  console.log('|---|---:|---:|---:|---:|');
  for (const r of results) console.log(`| ${r.name} | ${r.here.ms.toFixed(0)} | ${(r.here.ms / node.ms).toFixed(1)} | ${r.here.rssMb.toFixed(0)} | ${(r.here.rssMb / node.rssMb).toFixed(1)} |`);
} else {
  console.log(`| row | ${baseCommit}: wall ms (× node -e 0) / RSS MB | this tree: wall ms (× node -e 0) / RSS MB | this ÷ ${baseCommit}, wall |`);
  console.log('|---|---:|---:|---:|');
  const cell = (s: Sample) => `${s.ms.toFixed(0)} (${(s.ms / node.ms).toFixed(1)}) / ${s.rssMb.toFixed(0)}`;
  for (const r of results) console.log(`| ${r.name} | ${r.base ? cell(r.base) : ''} | ${cell(r.here)} | ${r.base ? (r.here.ms / r.base.ms).toFixed(2) : ''} |`);
}
rmSync(work, { recursive: true, force: true });
