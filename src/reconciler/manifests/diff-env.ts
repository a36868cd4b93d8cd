import type { ManifestObject } from './model.js';
import { withChildren } from './model.js';

/**
 * How two environments' desired states differ (`edgeplane diff-env A B DIR`), object by object and
 * field by field, from the manifests alone: the bodies as expanded for each environment (secrets
 * as their references, never their values).
 */
export interface EnvDiff {
  from: string;
  to: string;
  /** Identities only in one of them. */
  onlyIn: { environment: string; identity: string }[];
  /** Fields that differ, per identity in both. */
  changed: { identity: string; field: string; from?: unknown; to?: unknown }[];
}

export function diffEnvironments(from: string, a: ManifestObject[], to: string, b: ManifestObject[]): EnvDiff {
  const index = (os: ManifestObject[]) => new Map(withChildren(os).map((o) => [o.identity, o]));
  const left = index(a);
  const right = index(b);
  const out: EnvDiff = { from, to, onlyIn: [], changed: [] };
  for (const [id, o] of left) {
    const other = right.get(id);
    if (!other) {
      out.onlyIn.push({ environment: from, identity: id });
      continue;
    }
    const fields = (x: ManifestObject) => ({ ...x.body, ...(x.protect ? { protect: true } : {}) });
    for (const c of fieldDiff(fields(o), fields(other), '')) out.changed.push({ identity: id, ...c });
  }
  for (const id of right.keys()) if (!left.has(id)) out.onlyIn.push({ environment: to, identity: id });
  return out;
}

const isMapping = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The fields of two bodies that differ: mappings compared key by key, anything else as a whole value. */
function fieldDiff(a: unknown, b: unknown, at: string): { field: string; from?: unknown; to?: unknown }[] {
  if (isMapping(a) && isMapping(b)) {
    const out: { field: string; from?: unknown; to?: unknown }[] = [];
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) out.push(...fieldDiff(a[k], b[k], at ? `${at}.${k}` : k));
    return out;
  }
  if (JSON.stringify(a) === JSON.stringify(b)) return [];
  return [{ field: at, ...(a !== undefined ? { from: a } : {}), ...(b !== undefined ? { to: b } : {}) }];
}

const shown = (v: unknown) => (v === undefined ? '(not set)' : JSON.stringify(v));

export function renderEnvDiffText(d: EnvDiff): string {
  const lines = [`edgeplane diff-env: ${d.from} → ${d.to}`, ''];
  for (const o of d.onlyIn) lines.push(`${o.environment === d.from ? '-' : '+'} ${o.identity} (only in ${o.environment})`);
  let last = '';
  for (const c of d.changed) {
    if (c.identity !== last) lines.push(`~ ${c.identity}`);
    last = c.identity;
    lines.push(`    ${c.field}: ${shown(c.from)} → ${shown(c.to)}`);
  }
  const n = d.changed.length;
  lines.push('', d.onlyIn.length || n ? `${n} field${n === 1 ? '' : 's'} differ${n === 1 ? 's' : ''} in ${new Set(d.changed.map((c) => c.identity)).size} objects; ${d.onlyIn.length} object${d.onlyIn.length === 1 ? '' : 's'} only in one environment` : 'No differences.');
  return lines.join('\n') + '\n';
}

const cell = (v: unknown) => `\`${shown(v).replace(/`/g, "'").replace(/\|/g, '\\|').slice(0, 200)}\``;

export function renderEnvDiffMarkdown(d: EnvDiff): string {
  const lines = [`### edgeplane diff-env: \`${d.from}\` → \`${d.to}\``, ''];
  if (!d.onlyIn.length && !d.changed.length) return lines.concat(['**No differences.**', '']).join('\n');
  const fields = [...new Set(d.changed.map((c) => c.field.split('.')[0]))];
  lines.push(`**${d.changed.length} field(s) differ** (${fields.join(', ') || 'none'}); ${d.onlyIn.length} object(s) only in one environment.`, '');
  if (d.changed.length) {
    lines.push('| object | field | ' + d.from + ' | ' + d.to + ' |', '|---|---|---|---|');
    for (const c of d.changed.slice(0, 500)) lines.push(`| \`${c.identity}\` | \`${c.field}\` | ${cell(c.from)} | ${cell(c.to)} |`);
    if (d.changed.length > 500) lines.push('', `… and ${d.changed.length - 500} more (\`--json\` lists them all)`);
    lines.push('');
  }
  for (const o of d.onlyIn.slice(0, 500)) lines.push(`- \`${o.identity}\`: only in \`${o.environment}\``);
  return lines.join('\n') + '\n';
}
