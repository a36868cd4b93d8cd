import { formatProblem, type Problem } from '../manifests/problems.js';
import { decodeMetadata, encodeMetadata } from '../ownership/marker.js';
import type { Plan, Step } from '../plan/types.js';
import { blockLine, listChange, masked, short, shortPair, summaryLine, SYMBOL, visible } from './values.js';

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

interface Detail { changes: boolean; bodies: boolean; maxSteps: number }

function details(plan: Plan, d: Detail): string[] {
  const shown = plan.steps.slice(0, d.maxSteps);
  const out = ['<details><summary>Steps (' + plan.steps.length + ')</summary>', ''];
  for (const s of shown) {
    out.push(`#### ${SYMBOL[s.action]} ${stepTitle(s)}`);
    if (s.reason) out.push(`_${text(s.reason)}_`);
    if (d.changes && s.changes.length) {
      out.push('', '| field | before | after |', '|---|---|---|');
      for (const c of s.changes) {
        // A secret that changed shows as changed, as in the text plan: its two placeholders alike would read as no change.
        const changed = c.sensitive && c.before !== undefined && c.after !== undefined;
        const list = c.sensitive ? undefined : listChange(c.before, c.after);
        if (list) {
          const items = (xs: unknown[], sign: (v: unknown, i: number) => string) => xs.map((v, i) => `${sign(v, i)} ${code(short(v, 60))}`).join('<br>');
          // Reordered: the whole new order, numbered (failover children are tried in order).
          const after = list.reordered
            ? items(c.after as unknown[], (v, i) => `${list.added.includes(v) ? '+ ' : ''}${i + 1}.`)
            : items(list.added, () => '+');
          out.push(`| ${cell(code(c.path))} | ${cell(items(list.removed, () => '−'))} | ${cell(after)} |`);
          continue;
        }
        const [before, after] = c.before !== undefined && c.after !== undefined ? shortPair(c.before, c.after, 60) : [c.before === undefined ? '' : short(c.before, 60), c.after === undefined ? '' : short(c.after, 60)];
        out.push(`| ${cell(code(c.path))} | ${changed ? '(sensitive)' : cell(before === '' ? '' : code(before))} | ${changed ? '(sensitive value changed)' : cell(after === '' ? '' : code(after))} |`);
      }
    }
    out.push('', `${code(`${s.request.method} ${s.request.path}`)}${s.dependsOn.length ? ` after ${s.dependsOn.map(code).join(', ')}` : ''}`);
    if (d.bodies && s.request.body !== undefined) out.push('', '```json', JSON.stringify(shownBody(s.request.body), null, 2), '```');
    out.push('');
  }
  if (shown.length < plan.steps.length) out.push(`… and ${plan.steps.length - shown.length} more steps: run \`edgeplane plan --json\` for all of them.`, '');
  out.push('</details>');
  return out;
}

function head(plan: Plan, maxCallouts: number): string[] {
  const s = plan.summary;
  const out = [
    `### edgeplane plan for stack ${code(plan.stack)}`, '',
    `Target: ${code(plan.target)}`, '',
    '| | create | update | replace | delete |', '|---|---|---|---|---|',
    `| objects | ${s.create} | ${s.update} | ${s.replace} | ${s.delete} |`, '',
    `**${plan.steps.length ? summaryLine(plan) : plan.conflicts.length ? 'No changes planned until the conflicts below are resolved.' : 'No changes.'}**`, '',
  ];
  const called = plan.steps.filter((x) => x.action === 'delete' || x.action === 'replace');
  if (called.length) {
    out.push('> [!WARNING]', `> **${called.length} deletion${called.length > 1 ? 's' : ''} or replacement${called.length > 1 ? 's' : ''}**`, '>');
    for (const x of called.slice(0, maxCallouts)) out.push(`> - ${stepTitle(x)}${x.reason ? ` — ${text(x.reason)}` : ''}`);
    if (called.length > maxCallouts) out.push(`> - … and ${called.length - maxCallouts} more`);
    out.push('');
  }
  for (const b of plan.blocked) out.push(`> [!CAUTION]`, `> Blocked by the safety threshold: ${blockLine(b)}; \`apply\` needs \`--force\`.`, '');
  for (const k of plan.conflicts.slice(0, maxCallouts)) out.push(`> [!CAUTION]`, `> Conflict: ${text(k.message)}${k.adopt ? `<br>Adopt with ${code(k.adopt)}` : ''}`, '');
  if (plan.warnings.length) {
    out.push('Warnings:', '');
    for (const w of plan.warnings.slice(0, maxCallouts)) out.push(`- ${text(w)}`);
    if (plan.warnings.length > maxCallouts) out.push(`- … and ${plan.warnings.length - maxCallouts} more`);
    out.push('');
  }
  return out;
}

/**
 * The plan as a pull-request comment: summary table first, deletions and replacements called
 * out, every step in a collapsible block. Large plans are summarised (bodies, then change tables,
 * then steps are left out) so the comment stays under 65,000 characters.
 */
export function renderMarkdown(plan: Plan): string {
  const levels: Detail[] = [
    { changes: true, bodies: true, maxSteps: Infinity },
    { changes: true, bodies: false, maxSteps: Infinity },
    { changes: false, bodies: false, maxSteps: Infinity },
  ];
  for (let n = 1000; n >= 10; n = Math.floor(n / 2)) levels.push({ changes: false, bodies: false, maxSteps: n });
  for (const callouts of [200, 50, 10]) {
    for (const d of levels) {
      const text = [...head(plan, callouts), ...(plan.steps.length ? details(plan, d) : [])].join('\n') + '\n';
      if (text.length <= MARKDOWN_LIMIT) return text;
    }
  }
  return [...head(plan, 5), 'The plan is too large to show here; run `edgeplane plan --json`.'].join('\n').slice(0, MARKDOWN_LIMIT) + '\n';
}

/**
 * Manifests that do not validate, for the pull-request comment in place of a plan: every problem
 * with its position, in a code block (a problem's text is the manifest's, so nothing in it is
 * rendered as Markdown), cut to stay under the comment limit.
 */
export function problemsMarkdown(problems: Problem[]): string {
  const errors = problems.filter((p) => p.severity === 'error').length;
  const lines = problems.map(formatProblem);
  const head = [`### ❌ edgeplane plan: the manifests are not valid (${errors} error${errors === 1 ? '' : 's'})`, '', 'Nothing was planned. Fix these and push again:', '', '```'];
  const out: string[] = [];
  let size = head.join('\n').length + 200;
  for (const l of lines) {
    if (size + l.length + 1 > MARKDOWN_LIMIT) {
      out.push(`… and ${lines.length - out.length} more`);
      break;
    }
    out.push(l.replace(/```/g, 'ˋˋˋ'));
    size += l.length + 1;
  }
  return [...head, ...out, '```'].join('\n');
}
