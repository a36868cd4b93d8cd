/** Where a problem is: file and 1-based line and column. */
export interface Position { file: string; line: number; col: number }

/** One validation finding: every pass collects them, nothing stops at the first. */
export interface Problem extends Position {
  severity: 'error' | 'warning';
  /** JSON-ish path inside the document: `spec`, `routes[0].oidc.client_secret`. Empty: the document. */
  path: string;
  /** Short rule id, stable for tests and tools: `schema`, `unknown-reference`, `duplicate-name` … */
  rule: string;
  message: string;
}

export function formatProblem(p: Problem): string {
  return `${p.file}:${p.line}:${p.col}: ${p.severity}: ${p.path ? p.path + ': ' : ''}${p.message} [${p.rule}]`;
}

export function sortProblems(ps: Problem[]): Problem[] {
  return [...ps].sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.col - b.col || a.rule.localeCompare(b.rule));
}

export function hasErrors(ps: Problem[]): boolean {
  return ps.some((p) => p.severity === 'error');
}

/** `['routes', 0, 'oidc']` → `routes[0].oidc` (the same notation as the service's messages). */
export { formatPath } from '../../kinds/paths.js';
