import { readFileSync } from 'node:fs';
import type { ApiClient } from '../../src/client/api-client.js';
import type { Plan } from '../../src/reconciler/plan/types.js';

/**
 * Runs a plan's steps one after another: placeholders filled from earlier creates, secret sources
 * read from `env`. The test stand-in for `apply` (issue 6 builds the real one with a DAG,
 * retries and progress); it makes the "apply then plan is empty" property testable now.
 */
export async function applySequentially(client: ApiClient, plan: Plan, env: Record<string, string | undefined> = {}): Promise<void> {
  const ids = new Map<string, string>();
  const fill = (s: string) => s.replace(/\{([^{}]+)\.id\}/g, (m, identity: string) => ids.get(identity) ?? m);
  const resolve = (v: unknown): unknown => {
    if (typeof v === 'string') return fill(v);
    if (Array.isArray(v)) return v.map(resolve);
    if (v && typeof v === 'object') {
      if ('$secret' in v) {
        const src = (v as { $secret: { env?: string; fromEnv?: string; file?: string } }).$secret;
        if (src.file) return readFileSync(src.file, 'utf8').replace(/\r?\n$/, '');
        return env[src.env ?? src.fromEnv ?? ''];
      }
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolve(x)]));
    }
    return v;
  };
  for (const step of plan.steps) {
    const res = (await client.send(step.request.method, fill(step.request.path), step.request.body === undefined ? undefined : resolve(step.request.body))) as { id?: string } | undefined;
    if (step.yields && res?.id) ids.set(step.yields, res.id);
  }
}
