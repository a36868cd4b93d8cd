/**
 * Environments: what expanding the manifests (variables substituted) adds to `validate`'s work.
 * The bench stack (6,200 objects) is written twice in one run: with 50 substitutions per edge
 * (`${var.…}` in the edge's and its routes' descriptions and hostport, `{var: …}` for a module's
 * number) and with the same values written out. Each is loaded and validated in turn, alternating,
 * and the ratio of the medians is printed (issue 38: at most 1.15).
 *
 *   npm run bench:environments
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { caCertificates } from './ca-certs.js';
import { FULL, objectCount, writeManifests } from './reconcile-manifests.js';
import { selectEnvironment } from '../src/reconciler/manifests/environments.js';
import { validateDir } from '../src/reconciler/plan/prepare.js';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const VARS = Array.from({ length: 8 }, (_, i) => `v${i}`);
const VALUES: Record<string, string> = Object.fromEntries(VARS.map((v, i) => [v, `w${i}`]));

const root = mkdtempSync(join(tmpdir(), 'ep-bench-envs-'));
const plain = join(root, 'plain');
const withVars = join(root, 'vars');
const pems = caCertificates(FULL.cas, join(root, 'ca-certs.json'));
writeManifests(plain, FULL, pems, 'envs');
writeManifests(withVars, FULL, pems, 'envs');
// 8 in each of 6 descriptions (edge and 5 routes), 1 in the hostport, 1 whole field: 50 per edge.
const placeholders = VARS.map((v) => `\${var.${v}}`).join('-');
const literal = VARS.map((v) => VALUES[v]).join('-');
writeFileSync(join(withVars, 'edgeplane.yaml'), stringify({
  stack: 'bench',
  variables: { ...Object.fromEntries(VARS.map((v) => [v, { type: 'string' }])), share: { type: 'number' } },
  environments: { bench: { stack: 'bench', values: { ...VALUES, share: 0.25 } } },
}));
for (const f of readdirSync(withVars).filter((n) => n.startsWith('edges-'))) {
  const docs = parseAllDocuments(readFileSync(join(withVars, f), 'utf8')).map((d) => d.toJS() as Record<string, any>);
  const render = (vars: boolean) => docs.map((d) => stringify({
    ...d,
    description: vars ? placeholders : literal,
    hostports: [vars ? (d.hostports[0] as string).replace('.bench.', '.${var.v0}.') : (d.hostports[0] as string).replace('.bench.', `.${VALUES.v0}.`)],
    routes: d.routes.map((r: Record<string, unknown>) => ({ ...r, description: vars ? placeholders : literal, ...(r.circuit_breaker ? { circuit_breaker: { error_threshold_percentage: vars ? { var: 'share' } : 0.25 } } : {}) })),
  })).join('---\n');
  writeFileSync(join(withVars, f), render(true));
  writeFileSync(join(plain, f), render(false));
}

const environment = selectEnvironment(withVars, 'bench');
const time = (dir: string, vars: boolean) => {
  const t = performance.now();
  const v = validateDir({ root: dir, stack: 'bench', ...(vars ? { environment } : {}) });
  const ms = performance.now() - t;
  if (v.problems.some((p) => p.severity === 'error')) throw new Error(`${dir}: ${v.problems[0].message}`);
  return ms;
};
time(plain, false);
time(withVars, true); // warm
const a: number[] = [];
const b: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  a.push(time(plain, false));
  b.push(time(withVars, true));
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
console.log(`| objects | validate, values written out (ms) | validate, 50 substitutions per edge (ms) | ratio |`);
console.log(`|---|---|---|---|`);
console.log(`| ${objectCount(FULL)} | ${median(a).toFixed(0)} | ${median(b).toFixed(0)} | ${(median(b) / median(a)).toFixed(2)} |`);
rmSync(root, { recursive: true, force: true });
