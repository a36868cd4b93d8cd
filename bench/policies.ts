/**
 * `npm run bench:policies`: what a stack's policies cost a plan. The bench's manifests (1,000
 * edges × 5 routes + 100 CAs + 100 failover backends: 6,200 objects; `--scale N`) are applied
 * once to an embedded service (the state is kept in bench/.cache, shared with bench:plan-alloc),
 * the list pages are recorded, and the no-op plan (`preparePlan`) runs against them replayed from
 * memory: without policies, and with 10 (the starter set of examples/policies and five more that
 * match every route or edge), alternating, in one run. "With" includes loading and compiling the
 * policy files, as every plan does. Prints the medians and their ratio (target: policies ≤ 10 % of
 * the plan's time), of wall time and of the process's CPU time (steadier on a shared machine).
 *
 * Flags: --scale N (default 1)  --rounds N (default 9; each round one plan of each, after a warm-up)
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { preparePlan } from '../src/reconciler/plan/prepare.js';
import { loadPolicyFiles, NO_POLICIES } from '../src/reconciler/policy/load.js';
import { appliedStack } from './applied-stack.js';
import { flag, scaledSize } from './profile.js';
import { objectCount } from './reconcile-manifests.js';

const SCALE = Number(flag('scale', '1'));
const ROUNDS = Number(flag('rounds', '9'));
const SIZE = scaledSize(SCALE);
const HERE = fileURLToPath(new URL('./', import.meta.url));
const CACHE = join(HERE, '.cache');

/** Five more policies beside the starter set: each reads every route or edge. */
const EXTRA = [
  ['route-descriptions', 'HTTPSEdgeRoute', 'has(object.description) || object.match == "/"', 'warn'],
  ['route-backend', 'HTTPSEdgeRoute', 'has(object.backend) && object.backend.backend_id != ""', 'deny'],
  ['edge-description', 'HTTPSEdge', 'has(object.description) && size(object.description) <= 200', 'deny'],
  ['edge-port-443', 'HTTPSEdge', 'object.hostports.all(h, h.endsWith(":443"))', 'deny'],
  ['edge-mtls-two-cas', 'HTTPSEdge', '!has(object.mutual_tls) || size(object.mutual_tls.certificate_authority_ids) <= 4', 'warn'],
] as const;

function policyFiles(): string[] {
  const dir = join(CACHE, 'policies');
  mkdirSync(dir, { recursive: true });
  const starter = join(HERE, '..', 'examples', 'policies');
  const files = readdirSync(starter).filter((f) => f.endsWith('.yaml')).map((f) => join(starter, f));
  for (const [name, kind, expression, severity] of EXTRA) {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, `kind: Policy\nname: ${name}\nmatch:\n  kinds: [${kind}]\nrules:\n  - expression: '${expression}'\n    message: ${name}\n    severity: ${severity}\n`);
    files.push(file);
  }
  return files;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const { manifests, client, replay, pages } = await appliedStack(SIZE, CACHE);
  const files = policyFiles();
  try {
    const without: number[] = [];
    const withP: number[] = [];
    const cpuWithout: number[] = [];
    const cpuWith: number[] = [];
    let results = 0;
    let checked = 0;
    const run = async (policies: boolean) => {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const p = await preparePlan({ root: manifests, stack: 'bench', env: {}, policies: policies ? loadPolicyFiles(files) : { set: NO_POLICIES, problems: [] } }, replay);
      const ms = performance.now() - t0;
      const c = process.cpuUsage(c0);
      (policies ? cpuWith : cpuWithout).push((c.user + c.system) / 1000);
      if (p.plan!.steps.length) throw new Error(`no-op plan has ${p.plan!.steps.length} steps`);
      if (policies) {
        checked = p.plan!.policy!.checked.length;
        results = p.plan!.policy!.outcomes.reduce((n, o) => n + o.denied + o.warned, 0);
      }
      return ms;
    };
    await run(false);
    await run(true);
    cpuWith.length = cpuWithout.length = 0;
    for (let i = 0; i < ROUNDS; i++) {
      // Alternating, the order swapped each round: neither side always runs after the other.
      if (i % 2) { withP.push(await run(true)); without.push(await run(false)); }
      else { without.push(await run(false)); withP.push(await run(true)); }
    }
    const a = median(without);
    const b = median(withP);
    console.log(`objects ${objectCount(SIZE)}, ${checked} policies (${results} failed rules), ${ROUNDS} rounds alternating`);
    console.log(`no-op plan without policies: median ${a.toFixed(0)} ms (${without.map((x) => x.toFixed(0)).join(', ')})`);
    console.log(`no-op plan with policies:    median ${b.toFixed(0)} ms (${withP.map((x) => x.toFixed(0)).join(', ')})`);
    console.log(`with / without: ${(b / a).toFixed(3)}; policies' share of the plan: ${(100 * (b - a) / b).toFixed(1)} % (target ≤ 10 %)`);
    const ca = median(cpuWithout);
    const cb = median(cpuWith);
    console.log(`CPU time (process, all threads), medians: ${ca.toFixed(0)} / ${cb.toFixed(0)} ms = ${(cb / ca).toFixed(3)}; share ${(100 * (cb - ca) / cb).toFixed(1)} %`);
  } finally {
    await client.close();
  }
}

await main();
