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

const descriptionUpdates = (n: number) => Array.from({ length: n }, (_, i) => routeUpdate(i, `Route r${i % 5} of edge ${Math.floor(i / 5)}: checkout API`, `Route r${i % 5} of edge ${Math.floor(i / 5)}: checkout API, v2 rollout`));
const updateRows = (md: string) => md.split('\n').filter((l) => l.startsWith('| `HTTPSEdge/'));
/** The cells of a table row as GitHub splits them: at every pipe not escaped with a backslash. */
const cells = (row: string) => row.split(/(?<!\\)\|/).slice(1, -1);

describe('Markdown plan within its budget', () => {
  it('1, 350, 2,000 and 10,000 route updates: never over the budget, filled, and what is left out counted exactly', () => {
    for (const n of [1, 350, 2000, 10_000]) {
      const plan = planOf(descriptionUpdates(n));
      const md = renderMarkdown(plan);
      expect(md.length, `${n} updates`).toBeLessThanOrEqual(MARKDOWN_LIMIT);
      const rows = updateRows(md);
      expect(md).toContain(`**Plan: 0 to create, ${n} to update, 0 to delete**`);
      expect(md).toContain(`| HTTPS edge route | 0 | ${n} | 0 | 0 |`);
      if (n <= 350) {
        // Every new value visible, whole: nothing left out, no note.
        expect(rows).toHaveLength(n);
        for (const s of plan.steps) expect(md).toContain(`| \`${s.object.identity}\` | \`description\` | \`${JSON.stringify(s.changes[0].before)}\` | \`${JSON.stringify(s.changes[0].after)}\` |`);
        expect(md).not.toContain('Not shown here');
      } else {
        // Filled, not halved: what is left unused is less than the note's room and a row.
        expect(md.length, `${n} updates`).toBeGreaterThan(MARKDOWN_LIMIT - 1_500);
        expect(rows.length).toBeGreaterThan(300);
        // The rows shown are the first ones, and the note counts the others exactly.
        expect(rows.map((r) => cells(r)[0].trim())).toEqual(plan.steps.slice(0, rows.length).map((s) => `\`${s.object.identity}\``));
        expect(md).toContain(`**${fmt(n - rows.length)} updated objects** (of ${fmt(n)}), with what changes in them`);
        expect(md).toContain(`**… and ${fmt(n - rows.length)} more updated objects not listed here.**`);
        expect(md).toContain('`edgeplane plan DIR --out-markdown FILE` writes the whole plan');
      }
      const whole = renderMarkdownFull(plan);
      expect(updateRows(whole)).toHaveLength(n);
      expect(whole).not.toContain('Not shown here');
    }
  });

  it('destructive steps are never shed: 300 prunes beside 2,000 updates keep their full detail, the updates give way', () => {
    const plan = planOf([...descriptionUpdates(2000), ...Array.from({ length: 300 }, (_, i) => prune(i))]);
    const md = renderMarkdown(plan);
    expect(md.length).toBeLessThanOrEqual(MARKDOWN_LIMIT);
    for (let i = 0; i < 300; i++) expect(md).toContain(`##### - 🔴 delete \`FailoverBackend/old-${i}\` (\`bkdfo_${pad(i)}\`)\n_no longer in the manifests \\(prune\\)_`);
    expect(md).toContain('**300 deletions or replacements**');
    const rows = updateRows(md).length;
    expect(md).toContain(`**${fmt(2000 - rows)} updated objects** (of 2,000), with what changes in them`);
  });

  it('10,000 deletions still fit: one line each once their detail does not, and those past the budget counted exactly', () => {
    const plan = planOf(Array.from({ length: 10_000 }, (_, i) => prune(i)));
    const md = renderMarkdown(plan);
    expect(md.length).toBeLessThanOrEqual(MARKDOWN_LIMIT);
    const detailed = md.split('\n').filter((l) => l.startsWith('##### - 🔴 delete')).length;
    const lines = md.split('\n').filter((l) => l.startsWith('- 🔴 delete')).length;
    const left = Number(/\*\*… and ([\d,]+) more destructive steps not listed here\.\*\*/.exec(md)![1].replace(/,/g, ''));
    expect(detailed + lines + left).toBe(10_000);
    expect(md).toContain(`**${fmt(left)} destructive steps** (deletions, replacements, removals)`);
    expect(md).toContain(`the fields and requests of ${fmt(lines)} destructive steps (listed on one line each)`);
  });

  it('sheds create bodies first: every update row and create name stays, the bodies that do not fit are counted', () => {
    const plan = planOf([...Array.from({ length: 40 }, (_, i) => create(i)), ...descriptionUpdates(300)]);
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
    const long = (i: number, v: string) => `${v} `.repeat(80) + `#${i}`;
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
      const update = routeUpdate(i, long('old'), long('new'));
      const module: Step = {
        ...update, id: `${update.object.identity}:module.put:backend`, action: 'module.put', module: 'backend',
        request: { method: 'PUT', path: `${update.request.path}/backend`, body: {} },
        changes: [{ path: 'backend.backend_id', before: long('primary'), after: long('standby') }],
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
    const plan = planOf(Array.from({ length: 300 }, (_, i) => routeUpdate(i, `${'x'.repeat(i % 7)}${'🎉'.repeat(60)}a${'🎉'.repeat(40)}`, `${'x'.repeat(i % 7)}${'🎉'.repeat(60)}b${'🎉'.repeat(40)}`)));
    const md = renderMarkdown(plan, { limit: 40_000 });
    expect(md).toMatch(/cut to \d+ characters/);
    expect(md.length).toBeLessThanOrEqual(40_000);
    expect(md).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });

  it('values a little too long for the budget are cut only by what it takes (350 updates of 85 characters)', () => {
    const plan = planOf(Array.from({ length: 350 }, (_, i) => routeUpdate(i, `Route r${i % 5} of shop edge ${Math.floor(i / 5)} (checkout traffic)`, `Route r${i % 5} of shop edge ${Math.floor(i / 5)} (checkout traffic, moved to the v2 pool on 2026-11-25)`)));
    const md = renderMarkdown(plan);
    expect(md.length).toBeLessThanOrEqual(MARKDOWN_LIMIT);
    expect(updateRows(md)).toHaveLength(350);
    const cut = Number(/cut to (\d+) characters/.exec(md)![1]);
    expect(cut).toBeGreaterThanOrEqual(75);
    expect(md).toContain('"Route r0 of shop edge 0 (checkout traffic, moved to the v2 pool on');
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
