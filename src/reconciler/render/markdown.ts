import { formatProblem, type Problem } from '../manifests/problems.js';
import { decodeMetadata, encodeMetadata } from '../ownership/marker.js';
import { findKind, KINDS } from '../../kinds/registry.js';
import type { Change, Plan, Step } from '../plan/types.js';
import { mermaidText } from './mermaid.js';
import { policyMarkdown } from './policy-markdown.js';
import { type ChangeGroup, DESTRUCTIVE, groupChanges, groupLegend, groupTitle, riskOrder, shownTemplate } from './risk.js';
import { apart, ascii, blockLine, driftLine, driftObjects, type DiffLine, cascadeCounts, countOf, lineDiff, listChange, masked, multiLine, protectedLine, scopeLines, short, shortPair, sliceChars, summaryLine, SYMBOL, visible, waitingLine } from './values.js';

/** GitHub refuses comments over 65,536 characters; stay clear of it. */
export const MARKDOWN_LIMIT = 65_000;

const ICON: Record<Step['action'], string> = {
  create: '🟢', update: '🟡', replace: '🟣', delete: '🔴', 'module.put': '🟡', 'module.delete': '🔴',
};

/**
 * Text in a code span: one line (a line break, or any control character, could end the span's
 * paragraph and let what follows render as Markdown or HTML), invisible and bidi characters shown
 * as escapes, backticks replaced (a code span cannot hold its own delimiter).
 */
function code(s: string): string {
  return '`' + visible(s).replace(/`/g, 'ˋ') + '`';
}

/**
 * Free text (warnings, reasons, conflicts): it quotes values from manifests and from live objects,
 * which anyone who can open a pull request or write to the account controls. Every ASCII
 * punctuation character is backslash-escaped, so nothing in it renders as a link, an image, HTML,
 * a mention, emphasis or a table cell boundary; line breaks and other invisible characters show as
 * escapes (`\u000a`).
 */
function text(s: string): string {
  return visible(s).replace(/[!-/:-@[-`{-~]/g, (c) => `\\${c}`);
}

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function stepTitle(s: Step): string {
  return `${ICON[s.action]} ${s.action} ${code(s.object.identity)}${s.module ? ` ${code(s.module)}` : ''}${s.object.id ? ` (${code(s.object.id)})` : ''}`;
}

/**
 * A request body for the comment: secrets as "(sensitive)", and the ownership marker's secret
 * fingerprints left out. A fingerprint never gives a secret back, but a public comment is the
 * wrong place for something a weak secret can be guessed against (docs/manifests.md).
 */
function shownBody(body: unknown): unknown {
  const shown = masked(body) as Record<string, unknown>;
  if (!shown || typeof shown !== 'object' || typeof shown.metadata !== 'string') return shown;
  const { marker, user } = decodeMetadata(shown.metadata);
  if (!marker?.fp) return shown;
  const fp = Object.fromEntries(Object.keys(marker.fp).map((k) => [k, '(fingerprint)']));
  return { ...shown, metadata: encodeMetadata({ ...marker, fp }, user) };
}

/** A value in full, on one line (the unabridged comment, and the budgeted one while it has room). */
function full(v: unknown): string {
  return v === undefined ? '(absent)' : visible(JSON.stringify(v) ?? String(v));
}

/** The shortest prefix a long value is cut to (before update rows are shed), and the longest tried. */
const MIN_CUT = 60;
const MAX_CUT = 4_096;

/** A change as table cells (field, before, after), values whole (`max` Infinity) or cut to `max`. */
function changeCells(c: Change, max: number): string {
  const field = fieldCell(c.path, !!c.drift);
  // A secret that changed shows as changed: its two placeholders alike would read as no change.
  if (c.sensitive && c.before !== undefined && c.after !== undefined) return `${field} | (sensitive) | (sensitive value changed)`;
  const one = (v: unknown) => (max === Infinity && !(typeof v === 'string' && v.includes('\n')) ? full(v) : short(v, max));
  const list = c.sensitive ? undefined : listChange(c.before, c.after);
  if (list) {
    const items = (xs: unknown[], sign: (v: unknown, i: number) => string) => xs.map((v, i) => `${sign(v, i)} ${code(list.alike.has(v) ? ascii(one(v)) : one(v))}`).join('<br>');
    // Reordered: the whole new order, numbered (failover children are tried in order).
    const after = list.reordered
      ? items(c.after as unknown[], (v, i) => `${list.added.includes(v) ? '+ ' : ''}${i + 1}.`)
      : items(list.added, () => '+');
    return `${field} | ${cell(items(list.removed, () => '−'))} | ${cell(after)}`;
  }
  if (multiLine(c.before, c.after)) {
    // Text of several lines: every line that changed, where it is (each cut to `max` when the
    // comment must be; whole otherwise).
    const diff = lineDiff(c.before, c.after as string);
    const line = (d: DiffLine) => {
      const t = max === Infinity ? visible(JSON.stringify(d.text)) : short(d.text, max);
      return code(d.alike ? ascii(t) : t);
    };
    const side = (sign: '-' | '+') => diff.filter((d) => d.sign === '@' || d.sign === sign)
      .map((d) => (d.sign === '@' ? `@@ ${d.text}` : `${sign === '-' ? '−' : '+'} ${line(d)}`)).join('<br>');
    return `${field} | ${cell(side('-'))} | ${cell(side('+'))}`;
  }
  const both = c.before !== undefined && c.after !== undefined;
  // A multi-line value (a certificate, XML) reads no better whole on one line: it shows its first
  // line and line count, or the stretch where before and after differ.
  const lines = [c.before, c.after].some((v) => typeof v === 'string' && v.includes('\n'));
  const [before, after] = max === Infinity && !lines
    ? (both ? apart(full(c.before), full(c.after)) : [c.before === undefined ? '' : full(c.before), c.after === undefined ? '' : full(c.after)])
    : both ? shortPair(c.before, c.after, lines ? Math.min(max, 120) : max) : [c.before === undefined ? '' : short(c.before, max), c.after === undefined ? '' : short(c.after, max)];
  return `${field} | ${before === '' ? '' : cell(code(before))} | ${after === '' ? '' : cell(code(after))}`;
}

/** The field of a change, marked when the change is drift (the live value moved, the manifests did not). */
function fieldCell(path: string, drift: boolean): string {
  return `${cell(code(path))}${drift ? ' **(drift)**' : ''}`;
}

/** A destructive step with its reason, changed fields and request: nothing of it is ever left out but the length of values. */
function destructiveDetail(s: Step, max: number): string {
  const out = [`##### ${SYMBOL[s.action]} ${stepTitle(s)}`];
  if (s.reason) out.push(`_${text(s.reason)}_`);
  if (s.cascade?.length) out.push('', `Deletes with it (${cascadeText(s)}): ${s.cascade.map((x) => code(x.identity)).join(', ')}`);
  if (s.changes.length) {
    out.push('', '| field | before | after |', '|---|---|---|');
    for (const c of s.changes) out.push(`| ${changeCells(c, max)} |`);
  }
  out.push('', `${code(`${s.request.method} ${s.request.path}`)}${s.dependsOn.length ? ` after ${s.dependsOn.map(code).join(', ')}` : ''}`, '');
  return out.join('\n') + '\n';
}

/** A destructive step on one line, when even the detail of every one does not fit. */
function destructiveLine(s: Step): string {
  return `- ${stepTitle(s)}${s.cascade?.length ? ` (and ${cascadeText(s)} with it)` : ''}${s.reason ? ` — ${text(s.reason)}` : ''}\n`;
}

/** `5 HTTPS edge routes`: what a delete takes with it, counted per kind. */
function cascadeText(s: Step): string {
  return [...cascadeCounts([s])].map(([kind, k]) => countOf(kind, k)).join(', ');
}

/** The rows of one updated object: object (and why) on its first row, then a row per changed field. */
function updateRows(steps: Step[], max: number): string {
  const reasons = [...new Set(steps.map((s) => s.reason).filter((r): r is string => !!r))];
  const obj = `${code(steps[0].object.identity)}${reasons.map((r) => `<br>_${text(r)}_`).join('')}`;
  const rows: string[] = [];
  for (const s of steps) {
    if (!s.changes.length) rows.push(`${cell(code(`${s.request.method} ${s.request.path}`))} | | `);
    for (const c of s.changes) rows.push(changeCells(c, max));
  }
  return rows.map((r, i) => `| ${i ? '' : obj} | ${r} |`).join('\n') + '\n';
}

/** A group's templates cut to `max` characters (Infinity: whole), shown with `{N}` for the identities' numbers. */
function templateCell(t: string, max: number): string {
  const shown = shownTemplate(t);
  return cell(code(shown.length > max ? `${sliceChars(shown, 0, max - 1)}…` : shown));
}

/**
 * Objects with the same changes (`groupChanges`), as one entry: how many, of which kind, the
 * changes once (each identity's numbers as `{N}`, `{M}` …), and why. The objects themselves are
 * listed apart (`groupList`), when there is room.
 */
function groupBlock(g: ChangeGroup, max: number): string {
  const legend = groupLegend(g);
  const out = [`**${groupTitle(g)}**${legend ? ` (${legend})` : ''}:`, ''];
  for (const s of new Set(g.steps.map((x) => x.reason).filter((r): r is string => !!r))) out.push(`_${text(shownTemplate(s))}_`, '');
  out.push('| field | before | after |', '|---|---|---|');
  for (const s of g.steps) {
    if (!s.rows.length) out.push(`| ${code(`${s.method}${s.module ? ` ${s.module}` : ''}`)} | | |`);
    for (const r of s.rows) {
      const field = fieldCell(r.path, r.drift);
      if (r.sensitive) out.push(`| ${field} | (sensitive) | (sensitive value changed) |`);
      else out.push(`| ${field} | ${r.before === '(absent)' ? '' : templateCell(r.before, max)} | ${r.after === '(absent)' ? '' : templateCell(r.after, max)} |`);
    }
  }
  return out.join('\n') + '\n\n';
}

/** The first `k` objects of a group, collapsed (the others counted). */
function groupList(g: ChangeGroup, k: number): string {
  const rest = g.objects.length - k;
  const names = g.objects.slice(0, k).map((o) => code(o[0].object.identity)).join(', ');
  return `<details><summary>The ${groupTitle(g).slice(3)}${rest ? ` (${n(k)} listed)` : ''}</summary>\n\n${names}${rest ? `, … and ${n(rest)} more` : ''}\n\n</details>\n\n`;
}

/** How many of a group's objects its list can name in `room` characters. */
function listFits(g: ChangeGroup, room: number): number {
  let left = room - groupList(g, 0).length - 40;
  let k = 0;
  while (k < g.objects.length && left >= g.objects[k][0].object.identity.length + 4) left -= g.objects[k++][0].object.identity.length + 4;
  return k;
}

function createLine(steps: Step[]): string {
  const reason = steps.find((s) => s.action === 'create')?.reason;
  return `- ${code(steps[0].object.identity)}${reason ? ` — ${text(reason)}` : ''}\n`;
}

/** The requests that make one new object, bodies as JSON (secrets masked, fingerprints left out). */
function createBody(steps: Step[]): string {
  const out: string[] = [];
  for (const s of steps) {
    out.push(`${code(`${s.request.method} ${s.request.path}`)}${s === steps[0] ? ` ${code(s.object.identity)}` : ''}`, '');
    // JSON escapes line breaks, so no line of it can close the fence; invisible characters are shown as escapes.
    if (s.request.body !== undefined) out.push('```json', JSON.stringify(shownBody(s.request.body), null, 2).split('\n').map(visible).join('\n'), '```', '');
  }
  return out.join('\n') + '\n';
}

/**
 * A Mermaid flowchart of the steps whose order matters: those linked by dependencies to a
 * destructive step (a replacement's chain, an auth swap, a prune after its referrers), when they
 * are at most 40. Labels are the steps' actions and identities, escaped for Mermaid.
 */
export function orderChart(plan: Plan, max = 40): string {
  const index = new Map(plan.steps.map((s, i) => [s.id, i]));
  const root = plan.steps.map((_, i) => i);
  const find = (i: number): number => (root[i] === i ? i : (root[i] = find(root[i])));
  let linked = false;
  for (const [i, s] of plan.steps.entries()) {
    for (const d of s.dependsOn) {
      const j = index.get(d);
      if (j === undefined) continue;
      root[find(i)] = find(j);
      linked = true;
    }
  }
  if (!linked) return '';
  const size = new Map<number, number>();
  for (let i = 0; i < plan.steps.length; i++) size.set(find(i), (size.get(find(i)) ?? 0) + 1);
  const hot = new Set<number>();
  plan.steps.forEach((s, i) => { if (DESTRUCTIVE.has(s.action) && size.get(find(i))! > 1) hot.add(find(i)); });
  const shown = plan.steps.map((_, i) => i).filter((i) => hot.has(find(i)));
  if (!shown.length || shown.length > max) return '';
  const out = ['```mermaid', 'flowchart TD'];
  for (const i of shown) {
    const s = plan.steps[i];
    out.push(`  s${i}["${mermaidText(`${s.action} ${s.object.identity}${s.module ? ` ${s.module}` : ''}`)}"]`);
  }
  for (const i of shown) for (const d of plan.steps[i].dependsOn) if (index.has(d)) out.push(`  s${index.get(d)} --> s${i}`);
  out.push('```', '');
  return out.join('\n') + '\n';
}

/** Per kind: objects created, updated, replaced and deleted (counted as `plan.summary` counts them). */
function kindTable(plan: Plan): string[] {
  const rows = new Map<string, { create: Set<string>; update: Set<string>; replace: Set<string>; delete: number; cascade: number }>();
  const row = (kind: string) => {
    let r = rows.get(kind);
    if (!r) rows.set(kind, (r = { create: new Set(), update: new Set(), replace: new Set(), delete: 0, cascade: 0 }));
    return r;
  };
  for (const s of plan.steps) {
    const r = row(s.object.kind);
    for (const c of s.cascade ?? []) row(c.kind).cascade++;
    if (s.action === 'create') r.create.add(s.object.identity);
    else if (s.action === 'replace') r.replace.add(s.object.identity);
    else if (s.action === 'delete') { if (!s.id.endsWith(':delete-replaced')) r.delete++; }
    else r.update.add(s.object.identity);
  }
  const out = ['| kind | create | update | replace | delete |', '|---|--:|--:|--:|--:|'];
  const order = KINDS.map((k) => k.name);
  const names = [...rows.keys()].sort((a, b) => order.indexOf(a) - order.indexOf(b) || a.localeCompare(b));
  for (const k of names) {
    const r = rows.get(k)!;
    const update = [...r.update].filter((i) => !r.create.has(i) && !r.replace.has(i)).length;
    const del = r.cascade ? `${r.delete} + ${r.cascade} with their parent` : `${r.delete}`;
    out.push(`| ${text(findKind(k)?.title ?? k)} | ${r.create.size} | ${update} | ${r.replace.size} | ${del} |`);
  }
  if (!names.length) out.push('| (none) | 0 | 0 | 0 | 0 |');
  return out;
}

const n = (x: number) => x.toLocaleString('en-US');
const plural = (x: number, one: string, many = `${one}s`) => `${n(x)} ${x === 1 ? one : many}`;

/** ` (environment `production`)`, or nothing for a plan of a stack without environments. */
function envOf(plan: Plan): string {
  return plan.environment !== undefined ? ` (environment ${code(plan.environment)})` : '';
}

function head(plan: Plan, maxCallouts: number): string {
  const out = [
    `### edgeplane plan for stack ${code(plan.stack)}${envOf(plan)}`, '',
    `Target: ${code(plan.target)}`, '',
    ...scopeLines(plan).flatMap((l) => ['> [!IMPORTANT]', `> **${text(l)}**`, '']),
    ...policyMarkdown(plan, maxCallouts, { code, text }),
    `**${plan.steps.length ? summaryLine(plan) : plan.conflicts.length ? 'No changes planned until the conflicts below are resolved.' : plan.partial?.waiting ? waitingLine(plan.partial.waiting, 'see the warnings') : 'No changes.'}**`, '',
  ];
  if (plan.steps.length) out.push(...kindTable(plan), '');
  const called = plan.steps.filter((x) => x.action === 'delete' || x.action === 'replace').length;
  if (called) out.push('> [!WARNING]', `> **${n(called)} deletion${called > 1 ? 's' : ''} or replacement${called > 1 ? 's' : ''}**: every destructive step is listed below.`, '');
  const drift = driftObjects(plan);
  if (drift.length) {
    const named = drift.slice(0, maxCallouts).map((d) => `${code(d.identity)} (${d.fields.slice(0, 5).map(code).join(', ')}${d.fields.length > 5 ? ` and ${d.fields.length - 5} more` : ''})`);
    const more = drift.length > named.length ? `${named.length ? ', ' : ''}and ${n(drift.length - named.length)} more` : '';
    out.push('> [!WARNING]', `> **${driftLine(drift.length).replace(/: /, '**: ')}: ${named.join(', ')}${more}.`, '');
  }
  const clip = (s: string) => (s.length > 400 ? `${sliceChars(s, 0, 399)}…` : s);
  for (const b of plan.blocked) out.push(`> [!CAUTION]`, `> Blocked by the safety threshold: ${blockLine(b)}; \`apply\` needs \`--force\`.`, '');
  for (const p of plan.protectedChanges ?? []) out.push(`> [!CAUTION]`, `> Protected: ${text(clip(protectedLine(p)))}; \`apply\` needs \`--allow-protected-changes\`.`, '');
  for (const k of plan.conflicts.slice(0, maxCallouts)) out.push(`> [!CAUTION]`, `> Conflict: ${text(clip(k.message))}${k.adopt ? `<br>Adopt with ${code(clip(k.adopt))}` : ''}`, '');
  if (plan.conflicts.length > maxCallouts) out.push(`… and ${n(plan.conflicts.length - maxCallouts)} more conflicts (\`edgeplane plan\` lists them all)`, '');
  if (plan.warnings.length) {
    out.push('Warnings:', '');
    for (const w of plan.warnings.slice(0, maxCallouts)) out.push(`- ${text(clip(w))}`);
    if (plan.warnings.length > maxCallouts) out.push(`- … and ${n(plan.warnings.length - maxCallouts)} more (\`edgeplane plan\` lists them all)`);
    out.push('');
  }
  return out.join('\n') + '\n';
}

export interface MarkdownOptions {
  /** Characters the comment may take: 65,000 by default; `Infinity` for the whole plan, unabridged. */
  limit?: number;
  /**
   * The arguments of this plan's command (`shop --stack shop --destroy`), for the command the note
   * names to see what a budgeted comment leaves out; `DIR` without them.
   */
  args?: string;
}

/** Room kept for the note saying what was left out, beside the command it names (its longest form is under this). */
const NOTE_ROOM = 900;

const TABLE_HEAD = '| object | field | before | after |\n|---|---|---|---|\n';

/**
 * Updated objects as the entries of a section: groups of identical changes first (each one
 * block), then objects of their own (rows of one table).
 */
function entriesOf(objects: Step[][]): { groups: ChangeGroup[]; entries: ChangeGroup[] } {
  const groups = groupChanges(objects);
  const many = groups.filter((x) => x.objects.length > 1);
  return { groups: many, entries: [...many, ...groups.filter((x) => x.objects.length === 1)] };
}

/**
 * The plan as a pull-request comment, by risk: the summary (per kind), everything destructive in
 * full, then the updates that can break traffic or security (a field or module whose kind
 * declares a `risk`: hostports, auth modules, TLS, backends), then the creates (names; request
 * bodies collapsed), then the other updates. Updates that make the same change on many objects
 * (`groupChanges`) are one entry each, their objects listed in a collapsed block.
 *
 * Within `limit` characters the comment is filled, not halved, most risky first: destructive
 * steps (one line each, then their detail), the order chart, the risky updates, the create
 * names, the other updates — each stage filled in order, and the first that does not fit whole
 * ends the filling; long values are first cut to the longest prefix (60 characters at least)
 * that lets all of these fit. Then, with what room is left: the lists of the risky groups'
 * objects, the create bodies, the lists of the other groups' objects. What is shed is always the
 * least risky; a note at the top counts exactly what was left out and says how to see it.
 */
export function renderMarkdown(plan: Plan, opts: MarkdownOptions = {}): string {
  const limit = opts.limit ?? MARKDOWN_LIMIT;
  const dir = opts.args ?? 'DIR';
  const seeAll = `${code(`edgeplane plan ${dir} --out-markdown FILE`)} writes the whole plan, ${code(`edgeplane plan ${dir} --json`)} has every value`;
  const g = riskOrder(plan);
  const risky = entriesOf(g.risky);
  const other = entriesOf(g.other);
  const chart = orderChart(plan);
  const unbounded = limit === Infinity;
  // Pieces are made when the filling reaches them: a plan of 10,000 steps renders the few hundred that fit.
  const lazy = <T>(items: T[], make: (x: T) => string) => {
    const done: string[] = [];
    return (i: number) => (done[i] ??= make(items[i]));
  };
  const entry = (x: ChangeGroup, max: number) => (x.objects.length > 1 ? groupBlock(x, max) : updateRows(x.objects[0], max));
  const at = new Map<number, { d: (i: number) => string; r: (i: number) => string; o: (i: number) => string }>();
  /** Destructive details and update entries with values cut to `max` characters (Infinity: whole). */
  const valuesAt = (max: number) => {
    let p = at.get(max);
    if (!p) {
      at.set(max, (p = {
        d: lazy(g.destructive, (s) => destructiveDetail(s, max)),
        r: lazy(risky.entries, (x) => entry(x, max)),
        o: lazy(other.entries, (x) => entry(x, max)),
      }));
    }
    return p;
  };
  const dLine = lazy(g.destructive, destructiveLine);
  const cName = lazy(g.creates, createLine);
  const cBody = lazy(g.creates, createBody);
  const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
  const objectsIn = (entries: ChangeGroup[], from: number) => entries.slice(from).reduce((k, x) => k + x.objects.length, 0);
  const singles = (e: { entries: ChangeGroup[]; groups: ChangeGroup[] }) => e.entries.length > e.groups.length;

  const headings = {
    destructive: g.destructive.length ? `#### Deletions, replacements and removals (${plural(g.destructive.length, 'step')})\n\n` : '',
    chart: chart ? '#### Order of the steps\n\n' : '',
    risky: g.risky.length ? `#### Traffic and security changes (${plural(g.risky.length, 'object')})\n\n${singles(risky) ? TABLE_HEAD : ''}` : '',
    creates: g.creates.length ? `#### Creates (${plural(g.creates.length, 'object')})\n\n` : '',
    other: g.other.length ? `#### ${g.risky.length ? 'Other updates' : 'Updates'} (${plural(g.other.length, 'object')})\n\n${singles(other) ? TABLE_HEAD : ''}` : '',
    bodies: (k: number) => (k ? `\n<details><summary>Request bodies (${n(k)} of ${n(g.creates.length)})</summary>\n\n` : ''),
    bodiesEnd: '</details>\n',
  };

  for (const callouts of [20, 5, 0]) {
    const top = head(plan, callouts);
    // What each stage shows: destructive lines, their detail, the chart, risky entries, create
    // names, other entries, create bodies, and which groups' lists; and the length values are cut to.
    let shown = { dLines: g.destructive.length, dDetail: g.destructive.length, chart: !!chart, rEntries: risky.entries.length, cNames: g.creates.length, oEntries: other.entries.length, cBodies: g.creates.length, rLists: risky.groups.map((x) => x.objects.length), oLists: other.groups.map((x) => x.objects.length) };
    let cut = Infinity;
    /** Fills the stages with values cut to `max` characters: true when every stage but the lists and bodies fits. */
    const fill = (max: number): boolean => {
      let room = limit - top.length - NOTE_ROOM - seeAll.length - headings.destructive.length - headings.risky.length - headings.other.length - headings.creates.length - headings.bodies(1).length - headings.bodiesEnd.length;
      let open = room >= 0;
      /** Takes items 0…count-1 of a stage in order while they fit; a stage not taken whole ends the filling. */
      const take = (count: number, cost: (i: number) => number): number => {
        if (!open) return 0;
        let i = 0;
        while (i < count && cost(i) <= room) room -= cost(i++);
        if (i < count) open = false;
        return i;
      };
      /** The lists of the groups shown: as many of each group's objects as fit, group after group. */
      const lists = (groups: ChangeGroup[], shownEntries: number): number[] => groups.map((x, i) => {
        if (i >= shownEntries) return 0;
        const k = listFits(x, room);
        if (k) room -= groupList(x, k).length;
        return k;
      });
      const v = valuesAt(max);
      const dLines = take(g.destructive.length, (i) => dLine(i).length);
      const dDetail = take(dLines, (i) => v.d(i).length - dLine(i).length);
      const chartShown = !!chart && take(1, () => headings.chart.length + chart.length) === 1;
      const rEntries = take(risky.entries.length, (i) => v.r(i).length);
      const cNames = take(g.creates.length, (i) => cName(i).length);
      const oEntries = take(other.entries.length, (i) => v.o(i).length);
      const complete = dDetail === g.destructive.length && chartShown === !!chart && rEntries === risky.entries.length && cNames === g.creates.length && oEntries === other.entries.length;
      const rLists = lists(risky.groups, rEntries);
      open = true;
      const cBodies = take(cNames, (i) => cBody(i).length);
      const oLists = lists(other.groups, oEntries);
      shown = { dLines, dDetail, chart: chartShown, rEntries, cNames, oEntries, cBodies, rLists, oLists };
      cut = max;
      return complete;
    };
    // Values are cut only as far as it takes for every stage but the lists and bodies to fit: the
    // longest prefix that does (a binary search; a longer prefix never takes less room).
    if (!unbounded && !fill(Infinity) && fill(MIN_CUT)) {
      let [lo, hi] = [MIN_CUT, MAX_CUT];
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (fill(mid)) lo = mid;
        else hi = mid - 1;
      }
      fill(lo);
    }
    const v = valuesAt(cut);
    const out: string[] = [top];
    const left: string[] = [];
    if (headings.destructive) {
      out.push(headings.destructive);
      for (let i = 0; i < shown.dLines; i++) out.push(i >= shown.dDetail ? dLine(i) : v.d(i));
      if (shown.dDetail < shown.dLines) out.push('\n');
      if (shown.dLines < g.destructive.length) {
        out.push(`**… and ${plural(g.destructive.length - shown.dLines, 'more destructive step')} not listed here.**\n\n`);
        left.push(`**${plural(g.destructive.length - shown.dLines, 'destructive step')}** (deletions, replacements, removals)`);
      }
      if (shown.dDetail < shown.dLines) left.push(`the fields and requests of ${plural(shown.dLines - shown.dDetail, 'destructive step')} (listed on one line each)`);
    }
    if (chart) {
      if (shown.chart) out.push(headings.chart, chart);
      else left.push('the chart of the order of the steps');
    }
    /** A section of update entries: the groups (each with its list when shown), then the table of the others. */
    const section = (heading: string, e: typeof risky, count: number, make: (i: number) => string, lists: number[], what: string) => {
      if (!heading) return;
      if (count) {
        out.push(heading.replace(TABLE_HEAD, ''));
        let table = false;
        for (let i = 0; i < count; i++) {
          const isGroup = i < e.groups.length;
          if (!isGroup && !table) out.push(TABLE_HEAD), (table = true);
          out.push(make(i));
          if (isGroup && lists[i]) out.push(groupList(e.groups[i], lists[i]));
        }
        out.push('\n');
      }
      const unlisted = e.groups.reduce((k, x, i) => k + (i < count ? x.objects.length - lists[i] : 0), 0);
      if (unlisted) left.push(`the names of ${plural(unlisted, 'object')}${what ? ` ${what}` : ''} in groups of the same change (counted)`);
      if (count < e.entries.length) {
        const rest = objectsIn(e.entries, count);
        const total = objectsIn(e.entries, 0);
        if (count) out.push(`**… and ${plural(rest, `more updated object`)}${what ? ` ${what}` : ''} not listed here.**\n\n`);
        left.push(`**${plural(rest, 'updated object')}**${what ? ` ${what}` : ''} (of ${n(total)}), with what changes in ${rest === 1 ? 'it' : 'them'}`);
      }
    };
    section(headings.risky, risky, shown.rEntries, v.r, shown.rLists, 'with traffic or security changes');
    if (headings.creates) {
      if (shown.cNames) {
        out.push(headings.creates, ...range(0, shown.cNames).map(cName));
        if (shown.cNames < g.creates.length) out.push(`- … and ${plural(g.creates.length - shown.cNames, 'more object')}\n`);
        out.push(headings.bodies(shown.cBodies), ...range(0, shown.cBodies).map(cBody), shown.cBodies ? headings.bodiesEnd : '', '\n');
      }
      if (shown.cNames < g.creates.length) left.push(`the names and request bodies of ${plural(g.creates.length - shown.cNames, 'new object')} (of ${n(g.creates.length)})`);
      if (shown.cBodies < shown.cNames) left.push(`the request bodies of ${plural(shown.cNames - shown.cBodies, 'create')} listed`);
    }
    section(headings.other, other, shown.oEntries, v.o, shown.oLists, '');
    if (cut !== Infinity) {
      // Only steps whose values were long: a cut that changed nothing is not counted.
      const whole = valuesAt(Infinity);
      const cutD = range(0, shown.dDetail).filter((i) => whole.d(i) !== v.d(i)).length;
      // An updated object's rows may be of several steps (its update and its modules): each counts;
      // a group's cut counts for each of its objects.
      const cutSteps = (e: typeof risky, count: number, make: (i: number) => string, wholeOf: (i: number) => string) => range(0, count).reduce((k, i) => {
        if (wholeOf(i) === make(i)) return k;
        const x = e.entries[i];
        if (x.objects.length > 1) return k + x.objects.length * x.steps.filter((st) => st.rows.some((r) => !r.sensitive && (shownTemplate(r.before).length > cut || shownTemplate(r.after).length > cut))).length;
        return k + x.objects[0].filter((s) => s.changes.some((c) => changeCells(c, cut) !== changeCells(c, Infinity))).length;
      }, 0);
      const cutU = cutSteps(risky, shown.rEntries, v.r, whole.r) + cutSteps(other, shown.oEntries, v.o, whole.o);
      if (cutD + cutU) left.push(`long values of ${plural(cutD + cutU, 'step')} cut to ${cut} characters (${n(cutD)} destructive, ${n(cutU)} ${cutU === 1 ? 'update' : 'updates'})`);
    }
    if (left.length) out.splice(1, 0, `> [!NOTE]\n> **Not shown here** (this comment is limited to ${n(limit)} characters): ${left.join('; ')}. ${seeAll}.\n\n`);
    const md = out.join('').replace(/\n{3,}/g, '\n\n');
    if (md.length <= limit) return md;
  }
  const last = `### edgeplane plan for stack ${code(plan.stack)}${envOf(plan)}\n\n**${summaryLine(plan)}**\n\nThe plan does not fit in ${n(limit)} characters. ${seeAll}.\n`;
  return last.length <= limit ? last : sliceChars(last, 0, limit);
}

/** The whole plan as Markdown, nothing left out or cut (`plan --out-markdown`: a CI job summary or artifact). */
export function renderMarkdownFull(plan: Plan): string {
  return renderMarkdown(plan, { limit: Infinity });
}

/**
 * Manifests that do not validate, for the pull-request comment in place of a plan: every problem
 * with its position, in a code block (a problem's text is the manifest's, so nothing in it is
 * rendered as Markdown), cut to stay under the comment limit.
 */
export function problemsMarkdown(problems: Problem[], limit = MARKDOWN_LIMIT): string {
  const errors = problems.filter((p) => p.severity === 'error').length;
  const lines = problems.map(formatProblem);
  const head = [`### ❌ edgeplane plan: the manifests are not valid (${errors} error${errors === 1 ? '' : 's'})`, '', 'Nothing was planned. Fix these and push again:', '', '```'];
  const out: string[] = [];
  let size = head.join('\n').length + 200;
  for (const l of lines) {
    if (size + l.length + 1 > limit) {
      out.push(`… and ${lines.length - out.length} more`);
      break;
    }
    out.push(l.replace(/```/g, 'ˋˋˋ'));
    size += l.length + 1;
  }
  return [...head, ...out, '```'].join('\n');
}
