import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CONFIG_FILES, yamlLibrary } from './load.js';
import { parseYamlFast } from './yaml-fast.js';
import { STACK_NAME } from '../ownership/marker.js';

export const DEFAULT_STACK = 'default';

export interface StackConfig { stack: string; source: string }

/**
 * The stack: `--stack`, else `stack:` of `edgeplane.yaml` beside the manifests, else `default`.
 * The stack name goes into every marker, so two repositories (or environments) sharing an account
 * never delete each other's objects.
 */
export function resolveStack(root: string, flag?: string): StackConfig {
  if (flag !== undefined) return { stack: checkStack(flag, '--stack'), source: '--stack' };
  const dir = existsSync(root) && statSync(root).isFile() ? dirname(root) : root;
  for (const name of CONFIG_FILES) {
    const path = join(dir, name);
    if (!existsSync(path)) continue;
    const text = readFileSync(path, 'utf8');
    const fast = parseYamlFast(text); // one document in the fast parser's subset: no need to load the library
    const cfg = (fast?.length === 1 ? fast[0] : yamlLibrary().parse(text)) as { stack?: unknown } | null;
    if (cfg && typeof cfg === 'object' && cfg.stack !== undefined) return { stack: checkStack(String(cfg.stack), path), source: path };
  }
  return { stack: DEFAULT_STACK, source: 'default' };
}

function checkStack(s: string, where: string): string {
  if (!STACK_NAME.test(s)) throw new Error(`${where}: stack "${s}" must be lower-case letters, digits, ".", "_" or "-" (1-64 characters)`);
  return s;
}
