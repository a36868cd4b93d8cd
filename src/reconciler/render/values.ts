import { structuredPatch } from 'diff';
import { findKind } from '../../kinds/registry.js';
import { SENSITIVE } from '../plan/changes.js';
import { isSecretToken } from '../plan/tokens.js';
import type { Action, Plan, ProtectedChange, SafetyBlock } from '../plan/types.js';

export const SYMBOL: Record<Action, string> = {
  create: '+', update: '~', replace: '±', delete: '-', 'module.put': '~', 'module.delete': '-',
};

/**
 * Characters that change how text reads without showing themselves: C0/C1 controls, zero-width
 * characters, soft hyphens, bidirectional overrides and isolates (U+202E shows "/nimda/" as
 * "/admin/"), the BOM and line and paragraph separators.
 */
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb]/g;

/** `s` with every invisible character written as an escape (`\u202e`), so a reviewer sees it. */
export function visible(s: string): string {
  return s.replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `s` with every character outside ASCII written as an escape (`\u0301`). */
export function ascii(s: string): string {
  return s.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Whether two different texts read alike: the same Unicode text written two ways ("café" with
 * "é" as one character or as "e" and a combining accent, a ligature "ﬁ" for "fi"). Shown as they
 * are, a reviewer would see no change; `ascii` shows them apart.
 */
export function readAlike(a: string, b: string): boolean {
  return a !== b && a.normalize('NFKC') === b.normalize('NFKC');
}

/** A changed value's two sides as shown, with every character outside ASCII escaped when they would read alike. */
export function apart(a: string, b: string): [string, string] {
  return readAlike(a, b) ? [ascii(a), ascii(b)] : [a, b];
}

const high = (c: number) => c >= 0xd800 && c <= 0xdbff;
const low = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/**
 * `s.slice(from, to)` with neither end inside a surrogate pair (an emoji, most CJK extensions): half
 * of one is not a character, and prints as U+FFFD. An end inside a pair moves inward, so the text
 * is never longer than the slice asked for.
 */
export function sliceChars(s: string, from: number, to = s.length): string {
  if (from > 0 && from < s.length && low(s.charCodeAt(from)) && high(s.charCodeAt(from - 1))) from++;
  if (to > 0 && to < s.length && high(s.charCodeAt(to - 1)) && low(s.charCodeAt(to))) to--;
  return s.slice(from, to);
}

/** A value on one line: long strings and multi-line PEMs shortened (full values are in the JSON plan). */
export function short(v: unknown, max = 80): string {
  if (v === undefined) return '(absent)';
  if (typeof v === 'string' && v.includes('\n')) {
    const first = v.split('\n')[0];
    return `${visible(JSON.stringify(first.length > 40 ? sliceChars(first, 0, 40) + '…' : first + '…'))} (${v.split('\n').filter(Boolean).length} lines)`;
  }
  const s = visible(JSON.stringify(v) ?? String(v));
  return s.length > max ? sliceChars(s, 0, max - 1) + '…' : s;
}

/**
 * A changed value's before and after, each on one line, that never read the same: when shortening
 * makes them equal (a difference past the cut, in a later line of a certificate or XML, or an
 * invisible character), both show the stretch around their first difference instead.
 */
export function shortPair(before: unknown, after: unknown, max = 60): [string, string] {
  const whole = [visible(JSON.stringify(before) ?? String(before)), visible(JSON.stringify(after) ?? String(after))] as const;
  // Alike in full, they may still shorten to different lengths (NFD takes more characters).
  const alike = readAlike(whole[0], whole[1]);
  const a = short(before, max);
  const b = short(after, max);
  if (a !== b && !alike) return [a, b];
  const [x, y] = alike ? [ascii(whole[0]), ascii(whole[1])] : whole;
  if (x === y) return [a, b];
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  const from = Math.max(0, i - 20);
  const cut = (t: string) => `${from > 0 ? '…' : ''}${sliceChars(t, from, from + max - 2)}${from + max - 2 < t.length ? '…' : ''}`;
  return [cut(x), cut(y)];
}

/**
 * Which texts of `gone` and of `come` read alike (`readAlike`) with one on the other side, by
 * index, matched by their NFKC form (not by place: a line may move within a stretch of changes).
 * Only text outside ASCII can read alike with another.
 */
export function alikeAcross(gone: readonly string[], come: readonly string[]): [Set<number>, Set<number>] {
  const g = new Set<number>();
  const c = new Set<number>();
  const outsideAscii = /[^\x00-\x7f]/;
  if (!gone.some((t) => outsideAscii.test(t)) && !come.some((t) => outsideAscii.test(t))) return [g, c];
  const byForm = new Map<string, number[]>();
  come.forEach((t, j) => {
    const form = t.normalize('NFKC');
    byForm.set(form, [...(byForm.get(form) ?? []), j]);
  });
  gone.forEach((t, i) => {
    for (const j of byForm.get(t.normalize('NFKC')) ?? []) {
      if (come[j] !== t) {
        g.add(i);
        c.add(j);
      }
    }
  });
  return [g, c];
}

/** Whether a change is of text spanning lines on both sides (a certificate, XML, a long description). */
export function multiLine(before: unknown, after: unknown): before is string {
  return typeof before === 'string' && typeof after === 'string' && (before.includes('\n') || after.includes('\n'));
}

export function lineCount(s: string): string {
  const n = s.split('\n').length - (s.endsWith('\n') ? 1 : 0);
  return `${n} line${n === 1 ? '' : 's'}`;
}

/**
 * One line of a line diff: where a stretch of changes starts (`@`, its line numbers), a line gone
 * (`-`), a line come (`+`). `alike`: a line gone and the line come in its place read alike
 * (`readAlike`): each is shown with `ascii`.
 */
export interface DiffLine { sign: '@' | '-' | '+'; text: string; alike?: true }

/**
 * The lines that differ between two texts, each whole, grouped by where they are (jsdiff's
 * `structuredPatch`, no context lines). Shortening a certificate or XML to its first line and line
 * count hid every change past that line from a reviewer; this shows each one.
 */
export function lineDiff(before: string, after: string): DiffLine[] {
  const out: DiffLine[] = [];
  const gone: DiffLine[] = [];
  const come: DiffLine[] = [];
  for (const h of structuredPatch('', '', before, after, '', '', { context: 0 }).hunks) {
    // Where the stretch is, by the new text's lines (the old text's when it only removes lines).
    out.push({ sign: '@', text: h.newLines ? `line ${h.newStart}` : `line ${h.oldStart} of the old text` });
    for (const l of h.lines) {
      // "\ No newline at end of file": not a line of either text.
      if (l[0] !== '-' && l[0] !== '+') continue;
      const d: DiffLine = { sign: l[0], text: l.slice(1) };
      (l[0] === '-' ? gone : come).push(d);
      out.push(d);
    }
  }
  // Lines gone and come that read alike, in one stretch or two (a line moved as it was rewritten).
  const [g, c] = alikeAcross(gone.map((d) => d.text), come.map((d) => d.text));
  for (const i of g) gone[i].alike = true;
  for (const j of c) come[j].alike = true;
  return out;
}

/** Request bodies as shown to people: secret sources replaced by "(sensitive)". */
export function masked(v: unknown): unknown {
  if (isSecretToken(v)) return SENSITIVE;
  if (Array.isArray(v)) return v.map(masked);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, masked(x)]));
  return v;
}

/**
 * A safety block for people, in every place that says it (plan text, Markdown, apply's refusal):
 * `4 of 10 owned failover backends would change` — the kind's title, never its registry name.
 */
export function blockLine(b: SafetyBlock): string {
  const title = findKind(b.kind)?.title ?? b.kind;
  return `${b.changed} of ${b.owned} owned ${title.endsWith('y') ? `${title.slice(0, -1)}ies` : `${title}s`} would change`;
}

/** A protected object the plan deletes or replaces, in every place that says it. */
export function protectedLine(c: ProtectedChange): string {
  return `${c.identity} (${c.id}) would be ${c.action === 'delete' ? 'deleted' : 'replaced'}`;
}

/**
 * What a plan that is not the whole stack's ordinary plan says before anything else: partial
 * (`--target`: the rest of the stack is neither planned nor applied), or a destroy.
 */
export function scopeLines(plan: Plan): string[] {
  const out: string[] = [];
  if (plan.destroy) out.push(`DESTROY: every object stack "${plan.stack}" owns is deleted; objects it does not own are left alone.`);
  const p = plan.partial;
  if (p) {
    const created = p.created.length ? `, and the creation of ${p.created.join(', ')}, which they refer to` : '';
    const omitted = p.omitted ? `${p.omitted} step${p.omitted === 1 ? '' : 's'} of the stack outside the targets ${p.omitted === 1 ? 'is' : 'are'} not planned` : 'nothing else of the stack had changes';
    out.push(`PARTIAL PLAN: only what --target ${p.targets.join(', ')} selects${created}; ${omitted}. Plan without --target to see the whole stack.`);
  }
  return out;
}

export function summaryLine(plan: Plan): string {
  const s = plan.summary;
  // Counts are of objects; apply counts steps (a module written after its object is a step of its own).
  const objects = s.create + s.update + s.replace + s.delete;
  const steps = plan.steps.length;
  const cascaded = cascadeCounts(plan.steps);
  const withThem = cascaded.size ? ` (and ${[...cascaded].map(([kind, k]) => countOf(kind, k)).join(', ')} with them)` : '';
  return `Plan: ${s.create} to create, ${s.update} to update, ${s.replace ? `${s.replace} to replace, ` : ''}${s.delete} to delete${withThem}${steps !== objects ? ` (${steps} step${steps === 1 ? '' : 's'})` : ''}`;
}

/** A `--target` plan whose steps all wait for steps outside the targets (`partial.waiting`), as every output says it. */
export function waitingLine(waiting: number, then: string): string {
  return `Nothing among the targets can be applied alone: ${waiting} step${waiting === 1 ? '' : 's'} left out (${then}).`;
}

/** Children deleted with their parents (`Step.cascade`), counted per kind. */
export function cascadeCounts(steps: readonly { cascade?: { kind: string }[] }[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of steps) for (const c of s.cascade ?? []) out.set(c.kind, (out.get(c.kind) ?? 0) + 1);
  return out;
}

/** `150 HTTPS edge routes`, `1 HTTPS edge route`. */
export function countOf(kind: string, k: number): string {
  const title = findKind(kind)?.title ?? kind;
  return `${k.toLocaleString('en-US')} ${title}${k === 1 ? '' : 's'}`;
}

/**
 * A change between two lists, element by element: what left, what came, and whether the elements
 * that stayed moved. For a list too long to read on one line (a CA's mutual-TLS list, a failover
 * backend's children): `undefined` when either side is not a list or both fit `max` characters.
 */
export function listChange(before: unknown, after: unknown, max = 60): { removed: unknown[]; added: unknown[]; reordered: boolean; alike: Set<unknown> } | undefined {
  if (!Array.isArray(before) || !Array.isArray(after)) return undefined;
  if ((JSON.stringify(before) ?? '').length <= max && (JSON.stringify(after) ?? '').length <= max) return undefined;
  const key = (v: unknown) => JSON.stringify(v) ?? String(v);
  const had = new Set(before.map(key));
  const has = new Set(after.map(key));
  const kept = (xs: unknown[], other: Set<string>) => xs.map(key).filter((k) => other.has(k));
  const removed = before.filter((v) => !has.has(key(v)));
  const added = after.filter((v) => !had.has(key(v)));
  // An element gone and one come that read alike: shown with `ascii`, or the list reads unchanged.
  const [g, c] = alikeAcross(removed.map(key), added.map(key));
  const alike = new Set<unknown>([...[...g].map((i) => removed[i]), ...[...c].map((j) => added[j])]);
  return { removed, added, reordered: kept(before, has).join('\0') !== kept(after, had).join('\0'), alike };
}

/** The objects with drift (`Change.drift`), each with the fields or modules that moved, in plan order. */
export function driftObjects(plan: Plan): { identity: string; fields: string[] }[] {
  const out = new Map<string, Set<string>>();
  for (const s of plan.steps) {
    if (!s.drift) continue;
    let f = out.get(s.object.identity);
    if (!f) out.set(s.object.identity, (f = new Set()));
    for (const c of s.changes) if (c.drift) f.add(c.path);
  }
  return [...out].map(([identity, fields]) => ({ identity, fields: [...fields] }));
}

/** What every plan form says first of drift: how many objects moved away from what the stack last applied. */
export function driftLine(count: number): string {
  return `Changed outside edgeplane (drift): ${count} object${count === 1 ? '' : 's'} moved away from what this stack last applied; the changes marked (drift) undo that`;
}
