/**
 * Instruction counts of the policy check, for valgrind (deterministic, unlike times on a shared
 * machine). The bench's list pages are recorded once (`--record`, with the embedded service of
 * bench:policies); a counted run replays them from that file, plans without policies, then does
 * `--n N` times one of: `cold` (caches forgotten, policy files loaded and compiled, `checkPlan`),
 * `load` (the same without `checkPlan`), `warm` (`checkPlan` with the caches kept). Per check:
 * the difference of two counts over the difference of their N, e.g.
 *
 *   npx tsx bench/policies-count.ts --record
 *   valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null node --single-threaded \
 *     --hash-seed=1 --random-seed=1 --import tsx bench/policies-count.ts --mode cold --n 52
 *
 * (and --n 2: the difference over 50 is one iteration; a run's fixed part moves by ±2 × 10⁸
 * instructions between runs, so take N large). With node --expose-gc --max-semi-space-size=256,
 * it also prints what a check allocates.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiClient } from '../src/client/api-client.js';
import { preparePlan } from '../src/reconciler/plan/prepare.js';
import { checkPlan, clearPolicyCaches } from '../src/reconciler/policy/evaluate.js';
import { loadPolicyFiles, NO_POLICIES } from '../src/reconciler/policy/load.js';
import { appliedStack, type RecordedPage } from './applied-stack.js';
import { writeManifests } from './reconcile-manifests.js';
import { caCertificates } from './ca-certs.js';
import { flag, scaledSize } from './profile.js';
import { policyFiles } from './policy-files.js';

const SIZE = scaledSize(1);
const CACHE = join(fileURLToPath(new URL('./', import.meta.url)), '.cache');
const PAGES = join(CACHE, `policies-pages-${SIZE.edges}-${SIZE.cas}.json`);

if (process.argv.includes('--record')) {
  const { client, pages } = await appliedStack(SIZE, CACHE);
  await client.close();
  writeFileSync(PAGES, JSON.stringify([...pages]));
  console.log(`recorded ${pages.size} pages in ${PAGES}`);
} else {
  if (!existsSync(PAGES)) throw new Error(`no ${PAGES}: run with --record first`);
  const pages = new Map<string, RecordedPage>(JSON.parse(readFileSync(PAGES, 'utf8')) as [string, RecordedPage][]);
  const manifests = join(CACHE, `count-manifests-${SIZE.edges}-${SIZE.cas}`); // its own: bench:policies rewrites its copy
  writeManifests(manifests, SIZE, caCertificates(SIZE.cas, join(CACHE, 'ca-certs.json')), 'alloc');
  const replay = new ApiClient({
    target: 'replay',
    async request(method, path) {
      const page = pages.get(path);
      if (method !== 'GET' || !page) throw new Error(`not recorded: ${method} ${path}`);
      return { status: page.status, headers: page.headers, body: JSON.parse(page.text) };
    },
    close: async () => {},
  });
  const p = await preparePlan({ root: manifests, stack: 'bench', env: {}, policies: { set: NO_POLICIES, problems: [] } }, replay);
  if (p.plan!.steps.length) throw new Error(`no-op plan has ${p.plan!.steps.length} steps`);
  const files = policyFiles(CACHE);
  const mode = flag('mode', 'cold');
  const n = Number(flag('n', '1'));
  const input = { plan: p.plan!, desired: p.desired!, observed: p.observed };
  (globalThis as { __pol4?: unknown }).__pol4 = { files, input };
  let loaded = loadPolicyFiles(files);
  let out = checkPlan(loaded.set, input); // the first check of the process (its JIT warm-up), in every mode
  const gc = (globalThis as { gc?: () => void }).gc;
  const allocated: number[] = [];
  for (let i = 0; i < n; i++) {
    if (mode !== 'warm') {
      clearPolicyCaches();
      loaded = loadPolicyFiles(files);
    }
    if (mode === 'load') continue;
    gc?.();
    const h0 = process.memoryUsage().heapUsed;
    out = checkPlan(loaded.set, input);
    allocated.push(process.memoryUsage().heapUsed - h0);
  }
  // With node --expose-gc --max-semi-space-size=256 (no collection during a check): what one allocates.
  if (gc && allocated.length) console.log(`allocated per check (median of ${n}): ${(allocated.sort((a, b) => a - b)[Math.floor(n / 2)]! / 1e6).toFixed(2)} MB`);
  console.log(`${mode} ×${n}: ${out.outcomes.map((o) => `${o.policy} ${o.denied}/${o.warned}`).join(', ')}`);
}
