import { SENSITIVE } from '../plan/changes.js';
import { isSecretToken } from '../plan/tokens.js';
import type { Action, Plan } from '../plan/types.js';

export const SYMBOL: Record<Action, string> = {
  create: '+', update: '~', replace: '±', delete: '-', 'module.put': '~', 'module.delete': '-',
};

/** A value on one line: long strings and multi-line PEMs shortened (full values are in the JSON plan). */
export function short(v: unknown, max = 80): string {
  if (v === undefined) return '(absent)';
  if (typeof v === 'string' && v.includes('\n')) {
    const first = v.split('\n')[0];
    return `${JSON.stringify(first.length > 40 ? first.slice(0, 40) + '…' : first + '…')} (${v.split('\n').filter(Boolean).length} lines)`;
  }
  const s = JSON.stringify(v) ?? String(v);
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

/** Request bodies as shown to people: secret sources replaced by "(sensitive)". */
export function masked(v: unknown): unknown {
  if (isSecretToken(v)) return SENSITIVE;
  if (Array.isArray(v)) return v.map(masked);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, masked(x)]));
  return v;
}

export function summaryLine(plan: Plan): string {
  const s = plan.summary;
  return `Plan: ${s.create} to create, ${s.update} to update, ${s.replace ? `${s.replace} to replace, ` : ''}${s.delete} to delete`;
}
