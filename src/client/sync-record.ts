import { randomUUID } from 'node:crypto';
import { ApiRequestError, type ApiClient } from './api-client.js';

/** The service's record of syncs (docs/api.md, "Sync record"), as the CLI and the agent read and write it. */

export type RunOutcome = 'applied' | 'no_changes' | 'drifted' | 'failed' | 'blocked';
export type RunTrigger = 'commit' | 'interval' | 'webhook' | 'manual' | 'cli';
export interface RunCounts { create: number; update: number; replace: number; delete: number }
export interface Commit { sha: string; subject?: string | null; author?: string | null }

export interface NewSyncRun {
  stack: string;
  commit: Commit | null;
  trigger: RunTrigger;
  holder: string;
  duration_ms: number;
  outcome: RunOutcome;
  counts: RunCounts;
  drift_count?: number | null;
  error?: string | null;
  plan_markdown?: string | null;
  /** The objects the plan changed (a drift check: found changed), each with the fields that differ. */
  objects?: { identity: string; action: string; fields: string[]; drift?: boolean }[] | null;
  /** What the stack's policies found, and the overrides the run went ahead with; null: no policies. */
  policy?: { denied: number; warned: number; overrides: { policy: string; reason: string }[] } | null;
}

export interface SyncRun extends Omit<NewSyncRun, 'commit'> {
  id: string;
  uri: string;
  commit: { sha: string; subject: string | null; author: string | null } | null;
  started_at: string;
  finished_at: string;
  drift_count: number | null;
  error: string | null;
  plan_markdown?: string | null;
}

export interface StackSummary {
  stack: string;
  uri: string;
  runs_uri: string;
  status: 'synced' | 'out_of_sync' | 'failed' | 'unknown';
  live_commit: { sha: string; subject: string | null; author: string | null } | null;
  live_since: string | null;
  last_run: { id: string; uri: string; outcome: RunOutcome; trigger: RunTrigger; finished_at: string; commit_sha: string | null } | null;
  drift_count: number | null;
  lock: { holder: string; created_at: string; expires_at: string } | null;
  sync_requested_at: string | null;
  sync_requested_by: string | null;
}

/** The error field's budget (the service takes 8,000 characters). */
const ERROR_MAX = 8_000;

/** Records a run; sent again safely (an Idempotency-Key of its own). */
export async function recordRun(client: ApiClient, run: NewSyncRun): Promise<SyncRun> {
  const body = { ...run, error: run.error == null ? run.error : run.error.slice(0, ERROR_MAX) };
  return (await client.send('POST', '/sync_runs', body, { 'idempotency-key': `edgeplane-run-${randomUUID()}` })) as SyncRun;
}

/** The stack's summary; null when the service knows nothing of it yet (no run, lock or request). */
export async function getStack(client: ApiClient, stack: string): Promise<StackSummary | null> {
  const res = await client.exchange('GET', `/stacks/${encodeURIComponent(stack)}`);
  if (res.status === 404) return null;
  if (res.status >= 200 && res.status < 300) return res.body as StackSummary;
  throw new ApiRequestError('GET', `/stacks/${stack}`, res.status, res.body);
}

/** Every stack's summary, by name (at most `max`). */
export async function listStacks(client: ApiClient, max = 10_000): Promise<StackSummary[]> {
  const out: StackSummary[] = [];
  let path: string | null = '/stacks?limit=100';
  while (path && out.length < max) {
    const page = (await client.send('GET', path)) as { stacks: StackSummary[]; next_page_uri: string | null };
    out.push(...page.stacks);
    path = page.stacks.length && page.next_page_uri ? page.next_page_uri : null;
  }
  return out.slice(0, max);
}

/** The stack's runs, newest first, at most `max`. */
export async function listRuns(client: ApiClient, stack: string, max = 20): Promise<SyncRun[]> {
  const out: SyncRun[] = [];
  let path: string | null = `/sync_runs?stack=${encodeURIComponent(stack)}&limit=${Math.min(100, max)}`;
  while (path && out.length < max) {
    const page = (await client.send('GET', path)) as { sync_runs: SyncRun[]; next_page_uri: string | null };
    out.push(...page.sync_runs);
    path = page.sync_runs.length && page.next_page_uri ? page.next_page_uri : null;
  }
  return out.slice(0, max);
}

export async function getRun(client: ApiClient, id: string): Promise<SyncRun> {
  return (await client.send('GET', `/sync_runs/${encodeURIComponent(id)}`)) as SyncRun;
}

/** Asks the stack's agents for a sync now. */
export async function requestSync(client: ApiClient, stack: string, requestedBy: string): Promise<StackSummary> {
  return (await client.send('POST', `/stacks/${encodeURIComponent(stack)}/sync`, { requested_by: requestedBy.slice(0, 500) })) as StackSummary;
}
