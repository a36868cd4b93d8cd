import { describe, expect, it } from 'vitest';
import type { Plan, Step } from '../../src/reconciler/plan/types.js';
import { MARKDOWN_LIMIT, orderChart, renderMarkdown, renderMarkdownFull } from '../../src/reconciler/render/markdown.js';
import { mermaidText } from '../../src/reconciler/render/mermaid.js';
import { golden } from '../helpers/scenario.js';
import { join } from 'node:path';

const GOLDEN = join(import.meta.dirname, '..', 'fixtures', 'markdown');
const pad = (n: number) => String(n).padStart(27, '0');
const fmt = (n: number) => n.toLocaleString('en-US');

/** The update step the planner makes for a route whose description changed (shape of `test/scenarios/route-match-changed`). */
function routeUpdate(i: number, before: string, after: string): Step {
  const e = Math.floor(i / 5);
  const identity = `HTTPSEdge/edge-${e}/routes/r${i % 5}`;
  return {
    id: `${identity}:update`, action: 'update',
    object: { kind: 'httpsEdgeRoute', identity, name: `r${i % 5}`, id: `edghtsrt_${pad(i)}`, parent: `HTTPSEdge/edge-${e}` },
    request: { method: 'PATCH', path: `/edges/https/edghts_${pad(e)}/routes/edghtsrt_${pad(i)}`, body: { description: after } },
    changes: [{ path: 'description', before, after }], dependsOn: [],
  };
}

function prune(i: number, dependsOn: string[] = []): Step {
  const identity = `FailoverBackend/old-${i}`;
  return {
    id: `${identity}:delete`, action: 'delete',
    object: { kind: 'failoverBackend', identity, name: `old-${i}`, id: `bkdfo_${pad(i)}` },
    request: { method: 'DELETE', path: `/backends/failover/bkdfo_${pad(i)}` }, changes: [], dependsOn, reason: 'no longer in the manifests (prune)',
  };
}

function create(i: number): Step {
  const identity = `FailoverBackend/new-${i}`;
  const body = { description: `pool ${i} `.repeat(60), backends: Array.from({ length: 10 }, (_, j) => `bkdhr_${pad(i * 10 + j)}`), metadata: `{"managed_by":{"id":"${identity}","stack":"s","tool":"edgeplane","v":1}}` };
  return {
    id: `${identity}:create`, action: 'create', object: { kind: 'failoverBackend', identity, name: `new-${i}` },
    request: { method: 'POST', path: '/backends/failover', body },
    changes: [{ path: 'backends', after: body.backends }, { path: 'description', after: body.description }], dependsOn: [], yields: identity,
  };
}

function planOf(steps: Step[]): Plan {
  const count = (a: Step['action']) => new Set(steps.filter((s) => s.action === a).map((s) => s.object.identity)).size;
  return {
    formatVersion: 2, stack: 'shop', target: 'https://api.example.test', observed: {}, steps,
    summary: { create: count('create'), update: count('update'), replace: count('replace'), delete: count('delete') },
    warnings: [], conflicts: [], blocked: [],
  };
}

/** A number as letters (0 → a, 27 → bb): a value that differs per object without a number that could follow its identity. */
const tag = (i: number): string => (i < 26 ? String.fromCharCode(97 + i) : tag(Math.floor(i / 26) - 1) + String.fromCharCode(97 + (i % 26)));
const descriptionUpdates = (n: number) => Array.from({ length: n }, (_, i) => routeUpdate(i, `Route r${i % 5} of edge ${Math.floor(i / 5)}: checkout API`, `Route r${i % 5} of edge ${Math.floor(i / 5)}: checkout API, v2 rollout`));
/** Updates that differ object by object (no two alike): a row each. */
const distinctUpdates = (n: number) => Array.from({ length: n }, (_, i) => routeUpdate(i, `checkout API ${tag(i)}`, `checkout API ${tag(i)}, v2 rollout`));
const updateRows = (md: string) => md.split('\n').filter((l) => l.startsWith('| `HTTPSEdge/'));
/** The cells of a table row as GitHub splits them: at every pipe not escaped with a backslash. */
const cells = (row: string) => row.split(/(?<!\\)\|/).slice(1, -1);

describe('Markdown plan within its budget', () => {
  it('1, 350, 2,000 and 10,000 route updates (golden files): one entry for the same change, its objects listed as far as they fit, the rest counted', () => {
    for (const n of [1, 350, 2000, 10_000]) {
      const plan = planOf(descriptionUpdates(n));
      const md = renderMarkdown(plan);
      golden(join(GOLDEN, `updates-${n}.md`), md);
      expect(md.length, `${n} updates`).toBeLessThanOrEqual(MARKDOWN_LIMIT);
      expect(md).toContain(`**Plan: 0 to create, ${n} to update, 0 to delete**`);
      expect(md).toContain(`| HTTPS edge route | 0 | ${n} | 0 | 0 |`);
      if (n === 1) {
        expect(updateRows(md)).toEqual(['| `HTTPSEdge/edge-0/routes/r0` | `description` | `"Route r0 of edge 0: checkout API"` | `"Route r0 of edge 0: checkout API, v2 rollout"` |']);
        expect(md).not.toContain('Not shown here');
        continue;
      }
      // The same change on every route: one entry, each route's numbers as {N} and {M}.
      expect(updateRows(md)).toEqual([]);
      expect(md).toContain(`**on ${fmt(n)} HTTPS edge routes** ({N}, {M}: the first, second numbers in each one's identity):`);
      expect(md.split('| `description` |')).toHaveLength(2);
      expect(md).toContain('| `description` | `"Route r{M} of edge {N}: checkout API"` | `"Route r{M} of edge {N}: checkout API, v2 rollout"` |');
      // Its routes listed in plan order as far as they fit, the others counted exactly.
      const listed = md.split('\n').find((l) => l.startsWith('`HTTPSEdge/'))!.split(', ').filter((x) => x.startsWith('`'));
      expect(listed).toEqual(plan.steps.slice(0, listed.length).map((s) => `\`${s.object.identity}\``));
      if (listed.length < n) {
        expect(md.length, `${n} updates`).toBeGreaterThan(MARKDOWN_LIMIT - 1_500);
        expect(md).toContain(`<details><summary>The ${fmt(n)} HTTPS edge routes (${fmt(listed.length)} listed)</summary>`);
        expect(md).toContain(`, … and ${fmt(n - listed.length)} more\n`);
        expect(md).toContain(`the names of ${fmt(n - listed.length)} objects in groups of the same change (counted)`);
        expect(md).toContain('`edgeplane plan DIR --out-markdown FILE` writes the whole plan');
      } else {
        expect(md).not.toContain('Not shown here');
      }
      const whole = renderMarkdownFull(plan);
      expect(whole).toContain(`<details><summary>The ${fmt(n)} HTTPS edge routes</summary>`);
      expect(whole).not.toContain('Not shown here');
    }
  });

  it('objects whose changes differ stay apart: a number that is not of the identity is a difference', () => {
    // The same description on every route, but the backend version differs (3 of one, 2 of the other).
    const steps = Array.from({ length: 5 }, (_, i) => routeUpdate(i, 'checkout', `checkout v${i < 3 ? 7 : 8}`));
    const md = renderMarkdown(planOf(steps));
    expect(md).toContain('**on 3 HTTPS edge routes**:');
    expect(md).toContain('| `description` | `"checkout"` | `"checkout v7"` |');
    expect(md).toContain('**on 2 HTTPS edge routes**:');
    expect(md).toContain('| `description` | `"checkout"` | `"checkout v8"` |');
    // And a number that follows the identity on some routes only: those apart from the others.
    const mixed = renderMarkdown(planOf(Array.from({ length: 4 }, (_, i) => routeUpdate(i, 'x', `r${i < 2 ? i % 5 : 9}`))));
    expect(mixed).toContain('**on 2 HTTPS edge routes** ({M}: the second number in each one\'s identity):');
    expect(mixed).toContain('| `description` | `"x"` | `"r{M}"` |');
    expect(mixed).toContain('**on 2 HTTPS edge routes**:');
    expect(mixed).toContain('| `description` | `"x"` | `"r9"` |');
  });

  it('traffic and security changes come before creates, other updates after them; what is shed is the least risky', () => {
    const backend = (i: number): Step => ({
      ...routeUpdate(i, '', ''), id: `HTTPSEdge/edge-${i}/routes/r0:module.put:backend`, action: 'module.put', module: 'backend',
      object: { kind: 'httpsEdgeRoute', identity: `HTTPSEdge/edge-${i}/routes/r0`, name: 'r0', id: `edghtsrt_${pad(i)}` },
      changes: [{ path: 'backend.backend_id', before: 'FailoverBackend/old', after: 'FailoverBackend/new' }],
    });
    const updates = descriptionUpdates(3000).map((s) => ({ ...s, changes: [{ path: 'description', before: `${s.changes[0].before} ${tag(Number(s.object.id!.slice(9)))}`, after: `${s.changes[0].after} ${tag(Number(s.object.id!.slice(9)))}` }] }));
    const plan = planOf([...updates, create(1), backend(9000)]);
    const md = renderMarkdown(plan);
    expect(md.length).toBeLessThanOrEqual(MARKDOWN_LIMIT);
    const [risky, creates, other] = ['#### Traffic and security changes (1 object)', '#### Creates (1 object)', '#### Other updates (3,000 objects)'].map((h) => md.indexOf(h));
    expect(risky).toBeGreaterThan(0);
    expect(creates).toBeGreaterThan(risky);
    expect(other).toBeGreaterThan(creates);
    expect(md).toContain('| `HTTPSEdge/edge-9000/routes/r0` | `backend.backend_id` | `"FailoverBackend/old"` | `"FailoverBackend/new"` |');
    // Description rows are what gave way, counted (and the create's body, which comes after them).
    expect(md).toContain('- `FailoverBackend/new-1`\n');
    expect(md).toContain('the request bodies of 1 create listed');
    const shown = updateRows(md).length - 1;
    expect(shown).toBeGreaterThan(100);
    expect(md).toContain(`**${fmt(3000 - shown)} updated objects** (of 3,000), with what changes in them`);
  });

  it('sheds create bodies first: every update row and create name stays, the bodies that do not fit are counted', () => {
    const plan = planOf([...Array.from({ length: 40 }, (_, i) => create(i)), ...distinctUpdates(300)]);
    const md = renderMarkdown(plan);
    expect(md.length).toBeLessThanOrEqual(MARKDOWN_LIMIT);
    expect(updateRows(md)).toHaveLength(300);
    for (let i = 0; i < 40; i++) expect(md).toContain(`- \`FailoverBackend/new-${i}\`\n`);
    const bodies = md.split('```json').length - 1;
    expect(bodies).toBeGreaterThan(0);
    expect(bodies).toBeLessThan(40);
    expect(md).toContain(`<details><summary>Request bodies (${bodies} of 40)</summary>`);
    expect(md).toContain(`the request bodies of ${40 - bodies} creates listed`);
    expect(md).not.toContain('updated object');
  });

  it('then cuts long values to the longest prefix that lets every row fit, before any update row goes', () => {
    const long = (i: number, v: string) => `${v} `.repeat(80) + `#${tag(i)}`;
    const plan = planOf(Array.from({ length: 200 }, (_, i) => routeUpdate(i, long(i, 'old'), long(i, 'new'))));
    const md = renderMarkdown(plan);
    expect(md.length).toBeLessThanOrEqual(MARKDOWN_LIMIT);
    const rows = updateRows(md);
    expect(rows).toHaveLength(200);
    const cut = Number(/long values of 200 steps cut to (\d+) characters \(0 destructive, 200 updates\)/.exec(md)![1]);
    expect(cut).toBeGreaterThan(60);
    // The longest: one character more and the rows would not fit.
    expect(renderMarkdownFull(plan).length).toBeGreaterThan(MARKDOWN_LIMIT);
    expect(rows.every((r) => cells(r)[3].length <= cut + 4)).toBe(true);
    expect(md.length + 200 * 2).toBeGreaterThan(MARKDOWN_LIMIT - 1_000);
    // A cut value still shows where before and after differ.
    expect(cells(rows[199])[2]).toContain('old');
    expect(cells(rows[199])[3]).toContain('new');
  });

  it('counts every step whose values were cut, an object\'s update and its module steps alike', () => {
    const long = (v: string) => `${v} `.repeat(30);
    const steps = Array.from({ length: 60 }, (_, i): Step[] => {
      const update = routeUpdate(i, long(`old ${tag(i)}`), long(`new ${tag(i)}`));
      const module: Step = {
        ...update, id: `${update.object.identity}:module.put:backend`, action: 'module.put', module: 'backend',
        request: { method: 'PUT', path: `${update.request.path}/backend`, body: {} },
        changes: [{ path: 'backend.backend_id', before: long(`primary ${tag(i)}`), after: long(`standby ${tag(i)}`) }],
      };
      return [update, module];
    }).flat();
    const plan = planOf(steps);
    const md = renderMarkdown(plan, { limit: Math.floor(renderMarkdownFull(plan).length * 0.6) });
    const objects = new Set(updateRows(md).map((r) => cells(r)[0].trim()).filter(Boolean)).size;
    expect(objects).toBeGreaterThan(0);
    // Two steps of each object shown had their values cut: both counted.
    expect(md).toContain(`long values of ${2 * objects} steps cut to`);
    expect(md).toContain(`(0 destructive, ${2 * objects} updates)`);
  });

  it('a cut never splits a character in two (emoji are two UTF-16 units): no lone surrogate, no U+FFFD', () => {
    // Offsets 0…6 put the cut, and the start of the stretch that differs, on every position of a pair.
    const plan = planOf(Array.from({ length: 300 }, (_, i) => routeUpdate(i, `${'x'.repeat(i % 7)}${'🎉'.repeat(60)}a${'🎉'.repeat(40)}${tag(i)}`, `${'x'.repeat(i % 7)}${'🎉'.repeat(60)}b${'🎉'.repeat(40)}${tag(i)}`)));
    const md = renderMarkdown(plan, { limit: 40_000 });
    expect(md).toMatch(/cut to \d+ characters/);
    expect(md.length).toBeLessThanOrEqual(40_000);
    expect(md).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });

  it('values a little too long for the budget are cut only by what it takes (350 updates of 85 characters)', () => {
    const plan = planOf(Array.from({ length: 350 }, (_, i) => routeUpdate(i, `Route ${tag(i)} of the shop's edge (checkout traffic)`, `Route ${tag(i)} of the shop's edge (checkout traffic, moved to the v2 pool on 2026-11-25)`)));
    const md = renderMarkdown(plan);
    expect(md.length).toBeLessThanOrEqual(MARKDOWN_LIMIT);
    expect(updateRows(md)).toHaveLength(350);
    const cut = Number(/cut to (\d+) characters/.exec(md)![1]);
    expect(cut).toBeGreaterThanOrEqual(70);
    expect(md).toContain('"Route a of the shop\'s edge (checkout traffic, moved to the v2');
  });

  it('a secret shows as changed, never its value; hostile values cannot break the table or inject HTML', () => {
    const hostile = 'a | b `c` <img src=x onerror=alert(1)> </details>\n\n# heading [x](https://evil.example) \u202e';
    const step = routeUpdate(0, 'plain', hostile);
    step.reason = hostile;
    step.changes.push({ path: 'oidc.client_secret', before: '(sensitive)', after: '(sensitive)', sensitive: true });
    const plan = planOf([step]);
    for (const md of [renderMarkdown(plan), renderMarkdownFull(plan)]) {
      const rows = md.split('\n').filter((l) => l.startsWith('| `HTTPSEdge/') || l.startsWith('|  | `oidc'));
      expect(rows).toHaveLength(2);
      for (const r of rows) expect(cells(r)).toHaveLength(4);
      expect(rows[1]).toBe('|  | `oidc.client_secret` | (sensitive) | (sensitive value changed) |');
      expect(md.replace(/`[^`\n]*`/g, "")).not.toMatch(/(^|[^\\])<img/m); // literal inside code spans, escaped elsewhere
      expect(md).not.toContain('</details>\n');
      expect(md).not.toContain('\n# heading');
      // Its second line is shown too (the lines that changed), inside a code span: text, not a link.
      expect(md.replace(/`[^`\n]*`/g, '')).not.toContain('](https://evil');
      expect(md).not.toContain('\u202e');
    }
  });

  it('a Mermaid chart of the order when destructive steps depend on others, at most 40 of them; labels escaped', () => {
    const chain = (n: number) => planOf(Array.from({ length: n }, (_, i) => prune(i, i ? [`FailoverBackend/old-${i - 1}:delete`] : [])));
    expect(renderMarkdown(chain(40))).toContain('```mermaid\nflowchart TD\n  s0["delete FailoverBackend/old-0"]');
    expect(renderMarkdown(chain(40))).toContain('  s38 --> s39\n```');
    expect(orderChart(chain(41))).toBe('');
    // Independent steps: their order does not matter, no chart.
    expect(orderChart(planOf([prune(1), prune(2)]))).toBe('');
    expect(orderChart(planOf(descriptionUpdates(3)))).toBe('');
    expect(mermaidText('x"] --> evil["<b>`#&')).toBe('x#34;] --#62; evil[#34;#60;b#62;#96;#35;#38;');
  });

  it('layouts (golden files): the whole plan, and the same plan in a small budget', () => {
    const steps = [
      prune(1), prune(2, ['FailoverBackend/old-1:delete']),
      ...descriptionUpdates(6),
      create(1), create(2),
    ];
    steps.push({ ...routeUpdate(7, '', ''), changes: [{ path: 'oidc.client_secret', before: '(sensitive)', after: '(sensitive)', sensitive: true }, { path: 'match', before: '/api', after: '/v2/api' }] });
    const plan = planOf(steps);
    plan.warnings.push('HTTPSEdge/edge-1: a warning * with _markdown_');
    golden(join(GOLDEN, 'mixed.md'), renderMarkdown(plan));
    golden(join(GOLDEN, 'mixed-budget-3000.md'), renderMarkdown(plan, { limit: 3_000, args: 'edge' }));
    expect(renderMarkdown(plan, { limit: 3_000 }).length).toBeLessThanOrEqual(3_000);
  });
});
