/**
 * The planner's `diff()` against another version of itself, in one process: by default the one on
 * `main` (`--base REF`), whose changed planner files are copied from git into a scratch directory
 * and imported next to this tree's. Two cases on the benchmark's tree (6,200 objects,
 * `reconcile-manifests.ts`): every object to create (nothing live), and nothing to do (the live
 * objects are what applying that plan leaves: made here from its requests, no service runs). The
 * two versions run interleaved, alternating which goes first; the table gives each one's median
 * CPU and wall time and new / old (CPU time is what to read on a busy machine).
 *
 *   npx tsx --expose-gc bench/plan-phases.ts [--base main] [--runs 21] [--edges 1000]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { kindByName } from '../src/kinds/registry.js';
import type { Body } from '../src/kinds/types.js';
import { decodeMetadata } from '../src/reconciler/ownership/marker.js';
import { validateDir } from '../src/reconciler/plan/prepare.js';
import { buildDesired } from '../src/reconciler/plan/desired.js';
import { diff } from '../src/reconciler/plan/diff.js';
import { fingerprintObserved } from '../src/reconciler/plan/observed.js';
import type { DesiredObject, ObservedObject } from '../src/reconciler/plan/state.js';
import type { Plan } from '../src/reconciler/plan/types.js';
import { resolveSecrets } from '../src/reconciler/manifests/secrets.js';
import { caCertificates } from './ca-certs.js';
import { FULL, objectCount, writeManifests } from './reconcile-manifests.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const PLAN_DIR = join(ROOT, 'src', 'reconciler', 'plan');
const CACHE = join(ROOT, 'bench', '.cache');

type Diff = typeof diff;

const { values: args } = parseArgs({ options: { base: { type: 'string', default: 'main' }, runs: { type: 'string', default: '21' }, edges: { type: 'string', default: String(FULL.edges) } } });
const RUNS = Number(args.runs);
const SIZE = { ...FULL, edges: Number(args.edges) };

/**
 * `diff` as `ref` has it: the planner's files that differ from this tree's are written, as `ref`
 * has them, into a scratch directory, their imports of each other kept and every other relative
 * import pointed at this tree's file (so both versions share the kinds and their objects).
 */
async function baseDiff(ref: string, scratch: string): Promise<Diff> {
  const git = (...a: string[]) => execFileSync('git', a, { cwd: ROOT, encoding: 'utf8' });
  const inRef = new Set(git('ls-tree', '-r', '--name-only', ref, '--', 'src/reconciler/plan').split('\n').filter(Boolean));
  const changed = git('diff', '--name-only', ref, '--', 'src/reconciler/plan').split('\n').filter((f) => inRef.has(f));
  if (!changed.includes('src/reconciler/plan/diff.ts')) changed.push('src/reconciler/plan/diff.ts');
  const copied = new Set(changed.map((f) => resolve(ROOT, f)));
  for (const f of changed) {
    const from = dirname(resolve(ROOT, f));
    const text = git('show', `${ref}:${f}`).replace(/(from\s+|import\()'(\.{1,2}\/[^']+)'/g, (_, head: string, spec: string) => {
      const target = resolve(from, spec.replace(/\.js$/, '.ts'));
      const to = copied.has(target) ? `./${relative(PLAN_DIR, target).replace(/\.ts$/, '.js')}` : pathToFileURL(target.replace(/\.ts$/, '.js')).href;
      return `${head}'${to}'`;
    });
    writeFileSync(join(scratch, relative(PLAN_DIR, resolve(ROOT, f))), text);
  }
  return ((await import(pathToFileURL(join(scratch, 'diff.ts')).href)) as { diff: Diff }).diff;
}

/** The benchmark's manifests as desired objects (what `plan` builds before it diffs). */
function desiredObjects(): DesiredObject[] {
  const dir = join(CACHE, `plan-phases-${SIZE.edges}-${SIZE.cas}`);
  writeManifests(dir, SIZE, caCertificates(SIZE.cas, join(CACHE, 'ca-certs.json')), 'phases');
  const v = validateDir({ root: dir, stack: 'bench' });
  if (v.problems.some((p) => p.severity === 'error')) throw new Error(`bench manifests: ${v.problems.length} problems`);
  const s = resolveSecrets(v.objects, 'bench', { env: {}, cwd: dir });
  return buildDesired(v.objects, s.secrets);
}

/**
 * The live objects an apply of `plan` (creates only) leaves: each create's request with an id,
 * placeholders filled, modules put after it merged in, read back as `plan` reads its own objects.
 */
function applied(plan: Plan): ObservedObject[] {
  const ids = new Map<string, string>();
  const bodies = new Map<string, { kind: string; body: Body; parent?: string }>();
  const fill = (s: string) => s.replace(/\{([^{}]+)\.id\}/g, (_, identity: string) => ids.get(identity)!);
  for (const s of plan.steps) {
    if (s.action === 'create') {
      const kind = kindByName(s.object.kind);
      ids.set(s.object.identity, `${kind.idPrefix}_${String(ids.size + 1).padStart(27, '0')}`);
      bodies.set(s.object.identity, { kind: s.object.kind, body: JSON.parse(fill(JSON.stringify(s.request.body))) as Body, parent: s.object.parent });
    } else if (s.action === 'module.put') {
      bodies.get(s.object.identity)!.body[s.module!] = JSON.parse(fill(JSON.stringify(s.request.body)));
    } else throw new Error(`unexpected ${s.action} step in a plan from nothing`);
  }
  const out: ObservedObject[] = [];
  for (const [identity, { kind, body: { metadata, ...body }, parent }] of bodies) {
    const { marker, user } = decodeMetadata(metadata);
    const o = { kind: kindByName(kind), id: ids.get(identity)!, parentId: parent ? ids.get(parent) : undefined, body, metadata: metadata as string, marker, userMetadata: user, owner: { type: 'this' as const } };
    out.push({ ...o, fingerprint: fingerprintObserved(o) });
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function main() {
  const scratch = mkdtempSync(join(tmpdir(), 'edgeplane-plan-phases-'));
  try {
    const old = await baseDiff(args.base!, scratch);
    const desired = desiredObjects();
    const opts = { stack: 'bench', target: 'https://api.example.test' };
    const creates = diff(desired, [], opts);
    const live = applied(creates);
    const cases = [
      { name: 'all creates', observed: [] as ObservedObject[], steps: creates.steps.length },
      { name: 'no-op', observed: live, steps: 0 },
    ];
    // Both versions must make the same plans, or the comparison says nothing.
    for (const c of cases) {
      const [a, b] = [JSON.stringify(old(desired, c.observed, opts)), JSON.stringify(diff(desired, c.observed, opts))];
      if (a !== b) throw new Error(`${c.name}: the two versions plan differently`);
      if ((JSON.parse(b) as Plan).steps.length !== c.steps) throw new Error(`${c.name}: ${c.steps} steps expected`);
    }
    const gc = (globalThis as { gc?: () => void }).gc;
    /** Wall time and the process's CPU time (the main thread's and GC's; the machine's other load does not count in it), ms. */
    const time = (f: Diff, observed: ObservedObject[]) => {
      gc?.();
      const [t, c] = [performance.now(), process.cpuUsage()];
      f(desired, observed, opts);
      const used = process.cpuUsage(c);
      return { wall: performance.now() - t, cpu: (used.user + used.system) / 1000 };
    };
    console.log(`diff() on ${objectCount(SIZE).toLocaleString('en-US')} objects: this tree (new) against ${args.base} (old), ${RUNS} runs each, interleaved${gc ? ', GC before each' : ''}; load average ${loadavg()[0].toFixed(1)}\n`);
    console.log('| case | steps | old: CPU / wall ms | new: CPU / wall ms | new / old: CPU | new / old: wall | new / old: CPU, median of pairs |');
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    for (const c of cases) {
      for (let i = 0; i < 4; i++) time(i % 2 ? old : diff, c.observed); // warm-up
      const t = { old: [] as { wall: number; cpu: number }[], new: [] as { wall: number; cpu: number }[] };
      for (let i = 0; i < RUNS; i++) {
        if (i % 2) { t.old.push(time(old, c.observed)); t.new.push(time(diff, c.observed)); }
        else { t.new.push(time(diff, c.observed)); t.old.push(time(old, c.observed)); }
      }
      const m = (xs: { wall: number; cpu: number }[]) => ({ wall: median(xs.map((x) => x.wall)), cpu: median(xs.map((x) => x.cpu)) });
      const [mo, mn] = [m(t.old), m(t.new)];
      // Each run's ratio to the other version's run beside it: a change in the machine's load between runs cancels out.
      const paired = median(t.new.map((x, i) => x.cpu / t.old[i].cpu));
      console.log(`| ${c.name} | ${c.steps.toLocaleString('en-US')} | ${mo.cpu.toFixed(0)} / ${mo.wall.toFixed(0)} | ${mn.cpu.toFixed(0)} / ${mn.wall.toFixed(0)} | **${(mn.cpu / mo.cpu).toFixed(3)}** | ${(mn.wall / mo.wall).toFixed(3)} | ${paired.toFixed(3)} |`);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
