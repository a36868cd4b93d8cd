import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Body } from '../../src/kinds/types.js';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { encodeMetadata, MARKER_VERSION, TOOL } from '../../src/reconciler/ownership/marker.js';
import type { Plan } from '../../src/reconciler/plan/types.js';
import { MARKDOWN_LIMIT, renderMarkdown } from '../../src/reconciler/render/markdown.js';
import { renderText } from '../../src/reconciler/render/text.js';
import { planFromState } from '../helpers/plan-lists.js';

const STACK = 'shop';
const pad = (n: number) => String(n).padStart(27, '0');
const marker = (id: string) => encodeMetadata({ tool: TOOL, v: MARKER_VERSION, stack: STACK, id }, undefined);
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/**
 * The mixed plan of issue 34, made by the planner from manifests and a live state: 100 edges of
 * 10 routes (edge-0 has 11) whose 951 kept routes change their description, 5 edges pruned (their
 * 50 routes with them), 3 new edges of 1 route each (6 creates) and one hostport added to edge-1.
 */
async function mixedPlan(): Promise<Plan> {
  const routes = (e: number) => (e === 0 ? 11 : 10);
  const edges: Body[] = Array.from({ length: 100 }, (_, e) => ({
    id: `edghts_${pad(e)}`, uri: `https://api.example.test/edges/https/edghts_${pad(e)}`, created_at: '2026-01-01T00:00:00Z',
    description: '', hostports: [`edge-${e}.example.com:443`], metadata: marker(`HTTPSEdge/edge-${e}`),
    routes: Array.from({ length: routes(e) }, (_, r) => ({
      id: `edghtsrt_${pad(e * 100 + r)}`, uri: `https://api.example.test/edges/https/edghts_${pad(e)}/routes/edghtsrt_${pad(e * 100 + r)}`, created_at: '2026-01-01T00:00:00Z',
      edge_id: { id: `edghts_${pad(e)}`, uri: `https://api.example.test/edges/https/edghts_${pad(e)}` },
      match_type: 'path_prefix', match: `/r${r}/`, description: `route ${e}-${r}`, metadata: marker(`HTTPSEdge/edge-${e}/routes/route-${r}`),
    })),
  }));
  const docs: string[] = [];
  for (let e = 0; e < 95; e++) {
    const hostports = e === 1 ? `["edge-1.example.com:443", "www.edge-1.example.com:443"]` : `["edge-${e}.example.com:443"]`;
    docs.push(`kind: HTTPSEdge\nname: edge-${e}\nhostports: ${hostports}\nroutes:\n${Array.from({ length: routes(e) }, (_, r) => `  - name: route-${r}\n    match_type: path_prefix\n    match: /r${r}/\n    description: backend route ${e}-${r}\n`).join('')}`);
  }
  for (let i = 0; i < 3; i++) docs.push(`kind: HTTPSEdge\nname: new-${i}\nhostports: ["new-${i}.example.com:443"]\nroutes:\n  - name: root\n    match_type: path_prefix\n    match: /\n`);
  const dir = mkdtempSync(join(tmpdir(), 'ep-risk-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'edges.yaml'), docs.join('---\n'));
  const r = await planFromState({ root: dir, cwd: dir, stack: STACK, env: {} }, { https_edges: edges }, 'https://api.example.test');
  expect(r.problems.filter((p) => p.severity === 'error').map(formatProblem)).toEqual([]);
  return r.plan!;
}

describe('the pull-request comment by risk (issue 34)', () => {
  it('the mixed plan: within 65,000 characters, the 6 creates and the hostport before any description row, the 951 updates one entry', async () => {
    const plan = await mixedPlan();
    expect(plan.summary).toEqual({ create: 6, update: 952, replace: 0, delete: 5 });
    const md = renderMarkdown(plan);
    expect(md.length).toBeLessThanOrEqual(MARKDOWN_LIMIT);
    const firstDescription = md.indexOf('`description`');
    expect(firstDescription).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++) {
      for (const name of [`HTTPSEdge/new-${i}`, `HTTPSEdge/new-${i}/routes/root`]) {
        const at = md.indexOf(`- \`${name}\`\n`);
        expect(at, name).toBeGreaterThan(0);
        expect(at, name).toBeLessThan(firstDescription);
      }
    }
    // The hostport added to edge-1: its own entry, among the traffic and security changes, before.
    const hostport = md.indexOf('| `HTTPSEdge/edge-1` | `hostports` |');
    expect(hostport).toBeGreaterThan(0);
    expect(hostport).toBeLessThan(firstDescription);
    expect(md.indexOf('#### Traffic and security changes (1 object)')).toBeLessThan(md.indexOf('#### Creates (6 objects)'));
    expect(md.indexOf('#### Creates (6 objects)')).toBeLessThan(md.indexOf('#### Other updates (951 objects)'));
    // One entry for the 951 description updates: the change once, with what {N} and {M} stand for.
    expect(md).toContain('**on 951 HTTPS edge routes** ({N}, {M}: the first, second numbers in each one\'s identity):');
    expect(md).toContain('| `description` | `"route {N}-{M}"` | `"backend route {N}-{M}"` |');
    expect(md.split('`description`').length - 1).toBe(1);
    // Its objects in a collapsed block, as many as fit, the rest counted, and the note says so.
    const listed = /<details><summary>The 951 HTTPS edge routes(?: \(([\d,]+) listed\))?<\/summary>/.exec(md);
    expect(listed).not.toBeNull();
    const k = listed![1] ? Number(listed![1].replace(/,/g, '')) : 951;
    if (k < 951) {
      expect(md).toContain(`, … and ${951 - k} more\n`);
      expect(md).toContain(`the names of ${951 - k} objects in groups of the same change (counted)`);
    }
    // The 5 edge deletes in full, first, with the routes they take.
    for (let e = 95; e < 100; e++) expect(md.indexOf(`##### - 🔴 delete \`HTTPSEdge/edge-${e}\``)).toBeLessThan(hostport);
  });

  it('the text plan\'s summary in the same order, the 951 updates one line', async () => {
    const plan = await mixedPlan();
    const text = renderText(plan);
    const summary = text.slice(text.indexOf('By risk:'));
    const lines = summary.split('\n');
    expect(lines[1]).toBe('  5 destructive (delete, replace or module removal): HTTPSEdge/edge-95, HTTPSEdge/edge-96, HTTPSEdge/edge-97, HTTPSEdge/edge-98, HTTPSEdge/edge-99');
    expect(lines[2]).toBe('  1 traffic or security change: HTTPSEdge/edge-1 (hostports)');
    expect(lines[3]).toBe('  6 created: HTTPSEdge/new-0, HTTPSEdge/new-0/routes/root, HTTPSEdge/new-1, HTTPSEdge/new-1/routes/root, HTTPSEdge/new-2, HTTPSEdge/new-2/routes/root');
    expect(lines[4]).toBe('  951 other updates: on 951 HTTPS edge routes: description "route {N}-{M}" → "backend route {N}-{M}"');
  });
});
