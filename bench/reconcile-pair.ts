/**
 * `npm run bench:reconcile -- --base REF [--rounds N] [other flags]`: this tree against the commit
 * REF in one run. REF's sources are written to a scratch directory (`git archive`, with this
 * tree's node_modules linked in), this tree's bench driver is copied over them (where a module it
 * imports has moved since REF, a re-export at the new path points to the old one), and the driver
 * runs as a child process in each tree, alternately (REF, this, this, REF, …): each side with its
 * own service, engine and reconciler, under the same load. Printed: per engine, the median of each
 * row over the rounds, and this tree ÷ REF (above 1: slower here).
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { tsxModuleUrl } from '../src/util/worker.js';

/** Modules the driver imports that had another path at older commits: new path → old path (under src/). */
const MOVED: Record<string, string> = { 'reconciler/plan/prepare': 'reconciler/apply/prepare' };

/** The rows compared (a field of the driver's JSON row → its label); a row the run did not measure is left out. */
const ROWS: [string, string][] = [
  ['apply_ms', 'apply from empty (ms)'],
  ['noop_plan_ms', 'no-op plan (ms)'],
  ['page_fetch_ms', 'list pages alone (ms)'],
  ['plan_vs_fetch', 'no-op plan / list pages'],
  ['noop_plan_replayed_ms', 'no-op plan, pages replayed (ms)'],
  ['watch_median_ms', 'watch save → applied, median (ms)'],
];

type Row = Record<string, unknown> & { engine: string };

export async function runPair(root: string, argv: string[]): Promise<void> {
  const at = argv.indexOf('--base');
  const ref = argv[at + 1];
  if (!ref || ref.startsWith('--')) throw new Error('--base takes a commit (e.g. --base main)');
  const r = argv.indexOf('--rounds');
  const rounds = r >= 0 ? Number(argv[r + 1]) : 2;
  if (!(rounds >= 1 && Number.isInteger(rounds))) throw new Error(`--rounds takes a whole number ≥ 1, not ${argv[r + 1]}`);
  const passOn = argv.filter((_, i) => ![at, at + 1, ...(r >= 0 ? [r, r + 1] : [])].includes(i));
  const commit = execFileSync('git', ['rev-parse', '--short', `${ref}^{commit}`], { cwd: root, encoding: 'utf8' }).trim();

  const base = mkdtempSync(join(tmpdir(), `ep-bench-base-${commit}-`));
  try {
    prepareBase(root, ref, base);
    const trees = { base, here: root };
    const results: Record<'base' | 'here', Row[][]> = { base: [], here: [] };
    const order: ('base' | 'here')[] = [];
    for (let i = 0; i < rounds; i++) order.push(...(i % 2 === 0 ? ['base', 'here'] as const : ['here', 'base'] as const));
    const load: number[] = [];
    for (const [i, side] of order.entries()) {
      process.stderr.write(`\n== round ${Math.floor(i / 2) + 1}: ${side === 'base' ? `${ref} (${commit})` : 'this tree'}\n`);
      load.push(loadavg()[0]);
      results[side].push(await runDriver(trees[side], passOn));
    }
    process.stdout.write(`\nbench:reconcile, this tree against ${ref} (${commit}) in one run: ${rounds} round(s), order ${order.map((s) => (s === 'base' ? 'B' : 'T')).join('')}; ` +
      `load average ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)}\n\n${pairTable(results.base, results.here, commit)}\n`);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

/**
 * REF's files in `dir`, with this tree's node_modules (or REF's own, installed, when its lockfile
 * differs: a dependency added or removed since), bench driver and cached CA certificates.
 */
function prepareBase(root: string, ref: string, dir: string): void {
  execFileSync('sh', ['-c', `git archive --format=tar ${JSON.stringify(ref)} | tar -x -C ${JSON.stringify(dir)}`], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  const lock = (d: string) => readFileSync(join(d, 'package-lock.json'), 'utf8');
  if (lock(root) === lock(dir)) symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  else execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  for (const f of readdirSync(join(root, 'bench')).filter((f) => f.endsWith('.ts'))) copyFileSync(join(root, 'bench', f), join(dir, 'bench', f));
  const certs = join(root, 'bench', '.cache', 'ca-certs.json');
  if (existsSync(certs)) {
    mkdirSync(join(dir, 'bench', '.cache'), { recursive: true });
    copyFileSync(certs, join(dir, 'bench', '.cache', 'ca-certs.json'));
  }
  // The modules the driver imports, at their new paths.
  const driver = readFileSync(join(root, 'bench', 'reconcile.ts'), 'utf8');
  for (const [, mod] of driver.matchAll(/from '\.\.\/src\/([^']+)\.js'/g)) {
    if (existsSync(join(dir, 'src', `${mod}.ts`))) continue;
    const old = MOVED[mod];
    if (!old || !existsSync(join(dir, 'src', `${old}.ts`))) throw new Error(`src/${mod}.ts is not at ${ref}, and bench/reconcile-pair.ts knows no older path for it`);
    const file = join(dir, 'src', `${mod}.ts`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `export * from './${relative(dirname(file), join(dir, 'src', old))}.js';\n`);
  }
}

/** One run of the driver in `tree` (a child process); its rows. */
async function runDriver(tree: string, args: string[]): Promise<Row[]> {
  const out = join(mkdtempSync(join(tmpdir(), 'ep-bench-pair-')), 'rows.json');
  const child = spawn(process.execPath, ['--import', tsxModuleUrl('.'), join(tree, 'bench', 'reconcile.ts'), ...args, '--out', out], { cwd: tree, stdio: ['ignore', process.stderr, 'inherit'] }); // its own table too, as it goes
  const code = await new Promise<number | null>((r) => child.on('close', r));
  if (code !== 0) throw new Error(`the bench driver in ${tree} exited ${code}`);
  const rows = (JSON.parse(readFileSync(out, 'utf8')) as { rows: Row[] }).rows;
  rmSync(dirname(out), { recursive: true, force: true });
  return rows;
}

/** The middle value; of an even count, the mean of the middle two (of two rounds: their mean, not the larger). */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : +((s[m - 1] + s[m]) / 2).toFixed(2);
}

function pairTable(base: Row[][], here: Row[][], commit: string): string {
  const lines: string[][] = [['engine', 'row', commit, 'this tree', 'this ÷ base', 'per round']];
  for (const [e, { engine }] of base[0].entries()) {
    for (const [field, label] of ROWS) {
      const b = base.map((rows) => rows[e][field]).filter((v): v is number => typeof v === 'number');
      const h = here.map((rows) => rows[e][field]).filter((v): v is number => typeof v === 'number');
      if (!b.length || !h.length) continue;
      const perRound = b.map((x, i) => (h[i] / x).toFixed(2)).join(', ');
      lines.push([engine, label, String(median(b)), String(median(h)), `**${(median(h) / median(b)).toFixed(2)}**`, perRound]);
    }
  }
  const widths = lines[0].map((_, i) => Math.max(...lines.map((l) => l[i].length)));
  const fmt = (l: string[]) => `| ${l.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [fmt(lines[0]), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.slice(1).map(fmt)].join('\n');
}
