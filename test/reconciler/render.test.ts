import { describe, expect, it } from 'vitest';
import { kindByName } from '../../src/kinds/registry.js';
import { diff } from '../../src/reconciler/plan/diff.js';
import type { DesiredObject, ObservedObject } from '../../src/reconciler/plan/state.js';
import { observeOne } from '../../src/reconciler/plan/observed.js';
import { encodeMetadata } from '../../src/reconciler/ownership/marker.js';
import { MARKDOWN_LIMIT, renderMarkdown, renderMarkdownFull } from '../../src/reconciler/render/markdown.js';
import { parsePlan, renderJson } from '../../src/reconciler/render/json.js';
import { renderText } from '../../src/reconciler/render/text.js';

const fo = kindByName('failoverBackend');
const id = (n: number) => `bkdfo_${String(n).padStart(27, '0')}`;

/** A plan with `n` creates and `n` prunes of failover backends with long descriptions. */
function bigPlan(n: number) {
  const desired: DesiredObject[] = Array.from({ length: n }, (_, i) => ({
    kind: fo, identity: `FailoverBackend/new-${i}`, name: `new-${i}`, protect: false, fp: {},
    body: { description: 'x'.repeat(200), backends: [`bkdhr_${String(i).padStart(27, '0')}`] },
  }));
  const observed: ObservedObject[] = Array.from({ length: n }, (_, i) => observeOne(fo, {
    id: id(i), backends: [],
    metadata: encodeMetadata({ tool: 'edgeplane', v: 1, stack: 's', id: `FailoverBackend/old-${i}` }, undefined),
  }, 's'));
  return diff(desired, observed, { stack: 's', target: 't' });
}

describe('renderings', () => {
  it('a change never reads as no change: values that shorten alike show the stretch where they differ', () => {
    const plan = bigPlan(1);
    plan.steps[0].action = 'update'; // the Markdown shows field changes of updates and destructive steps
    const long = 'Admin console, SSO required for https://login.example.com/ and then some more words';
    const pem = (last: string) => `-----BEGIN CERTIFICATE-----\nMIIB\nAAAA\n${last}\n-----END CERTIFICATE-----\n`;
    plan.steps[0].changes = [
      { path: 'description', before: long, after: long.replace('more', 'other') },
      { path: 'idp_metadata', before: pem('Juc='), after: pem('Jud=') },
      { path: 'match', before: '/admin/', after: '/admin\u200b/' },
    ];
    const text = renderText(plan);
    const md = renderMarkdown(plan);
    // Text of several lines: the lines that changed, each whole, under the field.
    const lines = text.split('\n');
    const at = lines.findIndex((l) => l.includes('~ idp_metadata: 5 lines → 5 lines, the lines that changed:'));
    expect(lines.slice(at + 1, at + 4).map((l) => l.trim())).toEqual(['@@ line 4', '- Juc=', '+ Jud=']);
    for (const [path, from, to] of [['description', 'some more words', 'some other words'], ['match', '/admin/', '/admin\\u200b/']]) {
      const line = text.split('\n').find((l) => l.includes(`~ ${path}:`))!;
      const [before, after] = line.slice(line.indexOf(':') + 2).split(' → ');
      expect(before, path).not.toBe(after);
      expect(before, path).toContain(from);
      expect(after, path).toContain(to);
      const row = md.split('\n').find((l) => l.includes(` | \`${path}\` | `))!;
      expect(row, path).toContain(to);
    }
    const row = md.split('\n').find((l) => l.includes(' | `idp_metadata` | '))!;
    expect(row).toContain('@@ line 4<br>− `"Juc="`');
    expect(row).toContain('@@ line 4<br>+ `"Jud="`');
  });


  it('a change to the same text written another way (NFC to NFD, a ligature) shows each side escaped, never alike', () => {
    const plan = bigPlan(1);
    plan.steps[0].action = 'update';
    const nfc = 'Caf\u00e9 menu';
    const nfd = nfc.normalize('NFD');
    const xml = (name: string) => `<md>\n<org>${name}</org>\n</md>`;
    plan.steps[0].changes = [
      { path: 'description', before: nfc, after: nfd },
      { path: 'idp_metadata', before: xml('\ufb01rm'), after: xml('firm') },
    ];
    const text = renderText(plan);
    const line = text.split('\n').find((l) => l.includes('~ description:'))!;
    expect(line).toContain('"Caf\\u00e9 menu" → "Cafe\\u0301 menu"');
    const lines = text.split('\n').map((l) => l.trim());
    expect(lines).toContain('- <org>\\ufb01rm</org>');
    expect(lines).toContain('+ <org>firm</org>');
    for (const md of [renderMarkdown(plan), renderMarkdownFull(plan)]) {
      const row = md.split('\n').find((l) => l.includes(' | `description` | '))!;
      expect(row).toContain('Caf\\u00e9 menu');
      expect(row).toContain('Cafe\\u0301 menu');
      const xmlRow = md.split('\n').find((l) => l.includes(' | `idp_metadata` | '))!;
      expect(xmlRow).toContain('\\ufb01rm');
    }
    // Text that differs in what it reads as is shown as it is.
    plan.steps[0].changes = [{ path: 'description', before: 'Caf\u00e9', after: 'Caf\u00e8' }];
    expect(renderText(plan)).toContain('"Caf\u00e9" → "Caf\u00e8"');

    // Alike in full but cut at different lengths (NFD takes more characters); list elements; a
    // line that moved within a stretch of changes.
    const long = 'Caf\u00e9 backends for the partner API in the eu-west region, primary first';
    const groups = ['\u00c9quipe-R\u00e9seau', 'operations-team-for-the-partner-api', 'site-reliability-engineering'];
    plan.steps[0].changes = [
      { path: 'description', before: long, after: long.normalize('NFD') },
      { path: 'saml.authorized_groups', before: groups, after: groups.map((g) => g.normalize('NFD')) },
      { path: 'idp_metadata', before: 'line1\nCaf\u00e9\n', after: 'Caf\u00e9\n'.normalize('NFD') },
    ];
    const again = renderText(plan);
    const desc = again.split('\n').find((l) => l.includes('~ description:'))!;
    const [before, after] = desc.slice(desc.indexOf(':') + 2).split(' → ');
    expect(before).toContain('Caf\\u00e9');
    expect(after).toContain('Cafe\\u0301');
    const trimmed = again.split('\n').map((l) => l.trim());
    expect(trimmed).toContain('- "\\u00c9quipe-R\\u00e9seau"');
    expect(trimmed).toContain('+ "E\\u0301quipe-Re\\u0301seau"');
    expect(trimmed).toContain('- Caf\\u00e9');
    expect(trimmed).toContain('+ Cafe\\u0301');
    for (const md of [renderMarkdown(plan), renderMarkdownFull(plan)]) {
      expect(md).toContain('\\u00c9quipe-R\\u00e9seau');
      expect(md).toContain('E\\u0301quipe-Re\\u0301seau');
      expect(md).toContain('Cafe\\u0301');
    }
    // A line rewritten as it moved to another stretch of changes.
    const moved = (caf: string) => ['Caf' + caf, ...Array.from({ length: 10 }, (_, i) => `line ${i}`)];
    plan.steps[0].changes = [{ path: 'idp_metadata', before: moved('\u00e9').join('\n') + '\n', after: [...moved('\u00e9').slice(1), 'Caf\u00e9'.normalize('NFD')].join('\n') + '\n' }];
    const far = renderText(plan).split('\n').map((l) => l.trim());
    expect(far).toContain('- Caf\\u00e9');
    expect(far).toContain('+ Cafe\\u0301');
  });

  it('Markdown: text from manifests and live objects renders as text — no link, image, HTML, mention or line break gets through', () => {
    const hostile = 'x @octo-org/oncall ![](https://tracker.example/p.png) [Approve](https://evil.example) <img src=x> <details> <!-- `code`\n\n**No changes.**\n> [!CAUTION] |a|b| \u202enimda\u202c';
    const plan = bigPlan(1);
    plan.warnings.push(hostile);
    plan.steps[0].reason = hostile;
    plan.steps[1].reason = hostile;
    plan.steps[1].changes.push({ path: 'match', before: '/admin/', after: '/\u202enimda\u202c/' });
    const md = renderMarkdown(plan);
    for (const raw of ['@octo-org', '![](', '[Approve](', '<details> <', '<!--', '\n\n**No changes.**', '> [!CAUTION] |', '\u202e', '\u202c']) expect(md, raw).not.toContain(raw);
    expect(md).not.toMatch(/(^|[^\\])<img/m); // only as `\<img`: literal text
    // What was escaped is still there to read.
    expect(md).toContain('\\@octo\\-org\\/oncall');
    expect(md).toContain('\\u202enimda\\u202c');
    // A marker id that is not one the reconciler writes is not ours: the object is unmanaged, its text nowhere.
    const forged = observeOne(fo, { id: id(9), backends: [], metadata: '{"managed_by":{"id":"FailoverBackend/x\\n\\n**No changes.**","stack":"s","tool":"edgeplane","v":1}}' }, 's');
    expect(forged.owner).toEqual({ type: 'unmanaged' });
  });


  it('Markdown stays under 65,000 characters however large the plan, keeping the summary and the deletions call-out', () => {
    for (const n of [10, 300, 3000]) {
      const md = renderMarkdown(bigPlan(n));
      expect(md.length, `${n} objects`).toBeLessThanOrEqual(MARKDOWN_LIMIT);
      expect(md).toContain(`**Plan: ${n} to create, 0 to update, ${n} to delete**`);
      expect(md).toContain(`**${n.toLocaleString('en-US')} deletions or replacements**`);
    }
    expect(renderMarkdown(bigPlan(10))).toContain('#### Deletions, replacements and removals (10 steps)');
    expect(renderMarkdown(bigPlan(10))).toContain('#### Creates (10 objects)');
  });

  it('a secret that changed reads as changed in Markdown as in text (its placeholders alike would look unchanged)', () => {
    const plan = bigPlan(1);
    const step = plan.steps[0];
    step.action = 'update';
    step.changes = [
      { path: 'oidc.client_secret', before: '(sensitive)', after: '(sensitive)', sensitive: true },
      { path: 'description', before: 'a', after: 'b' },
    ];
    const md = renderMarkdown(plan);
    expect(md).toContain('| `oidc.client_secret` | (sensitive) | (sensitive value changed) |');
    expect(md).toContain('| `description` | `"a"` | `"b"` |');
    expect(renderText(plan)).toContain('~ oidc.client_secret: (sensitive value changed)');
  });

  it('text is coloured only when asked (the CLI asks on a TTY without NO_COLOR)', () => {
    const plan = bigPlan(1);
    expect(renderText(plan)).not.toMatch(/\x1b\[/);
    expect(renderText(plan, { color: true })).toMatch(/\x1b\[32m\+ create FailoverBackend\/new-0/);
    expect(renderText(plan, { color: true })).toMatch(/\x1b\[31m- delete FailoverBackend\/old-0/);
  });

  it('JSON round-trips and refuses another format version', () => {
    const plan = bigPlan(2);
    expect(parsePlan(renderJson(plan))).toEqual(plan);
    // Version 1 (fingerprints of whole responses) and a future version are both refused.
    expect(() => parsePlan(JSON.stringify({ ...plan, formatVersion: 1 }))).toThrow(/format version 2 \(formatVersion: 1\): it was saved by an older edgeplane; run plan again/);
    expect(() => parsePlan(JSON.stringify({ ...plan, formatVersion: 3 }))).toThrow(/format version 2/);
  });

  it('refuses a saved plan edited or cut short, naming what is wrong, before anything reads it', () => {
    const plan = bigPlan(2);
    const bad = (edit: (p: any) => void) => {
      const p = JSON.parse(renderJson(plan));
      edit(p);
      return () => parsePlan(JSON.stringify(p));
    };
    expect(bad((p) => { delete p.steps; })).toThrow(/^not a plan edgeplane can apply: \(the top level\) must have required property 'steps'; run plan again/);
    expect(bad((p) => { p.steps = {}; })).toThrow(/^not a plan edgeplane can apply: \/steps must be array/);
    expect(bad((p) => { delete p.steps[1].object; })).toThrow(/^not a plan edgeplane can apply: \/steps\/1 must have required property 'object'/);
    expect(bad((p) => { p.steps[0].request.method = 'GET'; })).toThrow(/\/steps\/0\/request\/method must be equal to one of the allowed values/);
    expect(bad((p) => { delete p.observed; })).toThrow(/must have required property 'observed'/);
    expect(bad((p) => { p.summary.create = -1; })).toThrow(/\/summary\/create must be >= 0/);
  });

  it('diff is pure: the same inputs give the same plan, byte for byte', () => {
    expect(renderJson(bigPlan(50))).toBe(renderJson(bigPlan(50)));
  });
});
