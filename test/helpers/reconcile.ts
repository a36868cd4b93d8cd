import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport, type Transport } from '../../src/client/transport.js';
import { applyPlan, type ApplyResult } from '../../src/reconciler/apply/execute.js';
import { secretsFromMap } from '../../src/reconciler/apply/materialize.js';
import { preparePlan, type Prepared } from '../../src/reconciler/plan/prepare.js';
import { formatProblem, hasErrors } from '../../src/reconciler/manifests/problems.js';
import { decodeMetadata } from '../../src/reconciler/ownership/marker.js';
import { readLiveState } from '../../src/reconciler/state/read-state.js';
import type { TestService } from './service.js';
import { ROOT } from './cli.js';
import { expect } from 'vitest';

export const EXAMPLES = join(ROOT, 'examples');
export const EXAMPLE_ENV = { SHOP_STRIPE_WEBHOOK_SECRET: 'whsec_test', SHOP_GITHUB_CLIENT_SECRET: 'gh-secret', SHOP_OIDC_CLIENT_SECRET: 'oidc-secret' };

const dirs: string[] = [];
export function tempDir(prefix = 'edgeplane-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}
export function cleanupDirs(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** A manifest directory with these files (relative paths). */
export function manifestDir(files: Record<string, string>, into = tempDir('edgeplane-m-')): string {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(into, name, '..'), { recursive: true });
    writeFileSync(join(into, name), text);
  }
  return into;
}

let copies = 0;

/**
 * A private copy of an example (tests edit it). Hostports are unique across the whole service,
 * so each copy gets its own (`small.example.com:443` → `small.c3x9.example.com:443`).
 */
export function copyExample(name: string): string {
  const d = tempDir(`edgeplane-${name}-`);
  cpSync(join(EXAMPLES, name), d, { recursive: true });
  const tag = `c${++copies}${Math.random().toString(36).slice(2, 6)}`;
  for (const f of readdirSync(d).filter((x) => /\.ya?ml$/.test(x))) {
    const text = readFileSync(join(d, f), 'utf8');
    writeFileSync(join(d, f), text.replace(/\.example\.com:(\d+)/g, `.${tag}.example.com:$1`));
  }
  return d;
}

/** A client for a fresh account of the test service, optionally over a wrapped transport. */
export async function clientFor(svc: TestService, wrap: (t: Transport) => Transport = (t) => t): Promise<ApiClient> {
  const account = await svc.account();
  return new ApiClient(wrap(httpTransport(svc.url, account.apiKey!)));
}

export async function prepare(client: ApiClient, root: string, stack: string, env: Record<string, string | undefined> = {}, extra: { adopt?: boolean } = {}): Promise<Prepared> {
  const p = await preparePlan({ root, stack, env, ...extra }, client);
  if (hasErrors(p.problems) || !p.plan) throw new Error(p.problems.map(formatProblem).join('\n'));
  return p;
}

/** Plans and applies with the real executor; throws when a step fails. */
export async function applyDir(client: ApiClient, root: string, stack: string, env: Record<string, string | undefined> = {}, opts: { parallelism?: number; retry?: Parameters<typeof applyPlan>[1]['retry'] } = {}): Promise<ApplyResult> {
  const p = await prepare(client, root, stack, env);
  if (p.plan!.conflicts.length) throw new Error(JSON.stringify(p.plan!.conflicts));
  const r = await applyPlan(p.plan!, { client, secrets: secretsFromMap(p.secrets), parallelism: opts.parallelism, retry: opts.retry });
  if (r.failed.length || r.skipped.length) throw new Error(`apply failed: ${JSON.stringify(r.failed)} skipped ${r.skipped.length}`);
  return r;
}

/** Steps a plan still has, as readable strings (empty: the live state matches). */
export async function remaining(client: ApiClient, root: string, stack: string, env: Record<string, string | undefined> = {}): Promise<string[]> {
  const p = await prepare(client, root, stack, env);
  return p.plan!.steps.map((s) => `${s.id} ${JSON.stringify(s.changes)}`);
}

/** Every live object with its marker identity (or `unmanaged`), routes included. */
export async function liveObjects(client: ApiClient): Promise<{ id: string; identity: string }[]> {
  const lists = await readLiveState(client);
  const out: { id: string; identity: string }[] = [];
  const visit = (o: Record<string, unknown>) => {
    const { marker } = decodeMetadata(o.metadata);
    out.push({ id: o.id as string, identity: marker ? `${marker.stack}:${marker.id}` : 'unmanaged' });
    for (const r of (o.routes as Record<string, unknown>[] | undefined) ?? []) visit(r);
  };
  for (const list of Object.values(lists)) for (const o of list) visit(o);
  return out;
}

/** Identities that occur more than once among live objects. */
export function duplicates(objects: { identity: string }[]): string[] {
  const seen = new Map<string, number>();
  for (const o of objects) seen.set(o.identity, (seen.get(o.identity) ?? 0) + 1);
  return [...seen].filter(([id, n]) => id !== 'unmanaged' && n > 1).map(([id]) => id);
}

/** Replaces `from` in a file, failing the test when the file does not contain it. */
export function editFile(file: string, from: string | RegExp, to: string): void {
  const before = readFileSync(file, 'utf8');
  const after = before.replace(from, to);
  expect(after, `edit of ${file}`).not.toBe(before);
  writeFileSync(file, after);
}
