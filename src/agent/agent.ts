import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { listStacks, recordRun, type Commit, type RunTrigger } from '../client/sync-record.js';
import { resolveStack } from '../reconciler/manifests/config.js';
import { environmentNames, selectEnvironment } from '../reconciler/manifests/environments.js';
import type { AgentConfig, StackEntry } from './config.js';
import { GitSource } from './git-source.js';
import type { AgentMetrics } from './metrics.js';
import { syncStack, type SyncContext, type SyncResult } from './sync.js';

const STACK_FILES = ['edgeplane.yaml', 'edgeplane.yml'];
/** Failures are retried after 2 s, doubling to 5 min, each wait with ±25 % jitter. */
const BACKOFF_BASE_MS = 2_000;
const BACKOFF_CAP_MS = 300_000;
/** Another agent holds the stack: looked at again after this (with jitter), until its lock frees. */
const LOCKED_RETRY_MS = 1_000;
/** How often the agent asks the service for syncs asked for (`edgeplane sync`): one list request. */
const REQUEST_POLL_MS = 5_000;

export function backoffMs(failures: number, random: () => number = Math.random): number {
  const base = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (0.75 + random() / 2));
}

interface SourceState {
  git: GitSource;
  commit?: Commit;
  fetchedAt: number;
  nextFetch: number;
  failures: number;
  error?: string;
  /** A push webhook asked for a fetch: the next sync of a new commit says `webhook`. */
  webhook: boolean;
  trigger: RunTrigger;
}

interface StackState {
  key: string;
  stack: string;
  dir: string;
  /** The environment of edgeplane.yaml this stack is (each environment is synced as its own stack). */
  environment?: string;
  source: SourceState;
  settings: StackEntry;
  /** The commit last synced (applied, found live, or reported), from which a new commit is told. */
  syncedSha?: string;
  lastCheck: number;
  failures: number;
  retryAt: number;
  retryTrigger?: RunTrigger;
  /** Fetched again because another commit went live meanwhile: the fetched commit is the newest, whatever the times say. */
  refetched?: boolean;
  /** The commit last tried: a commit not yet tried is synced at once, whatever the backoff. */
  triedSha?: string;
  manual: boolean;
  /** Why its last sync failed, for /readyz; cleared by a sync that did not fail. */
  error?: string;
  /** The Git failure last recorded for it: the same failure again is not recorded again. */
  recordedSourceError?: string;
}

export interface AgentStatus { ready: boolean; reasons: string[] }

/**
 * The sync agent's loop: sources fetched on their interval (at once on a webhook), stacks found in
 * them synced when their commit changes, when a sync is asked for through the service, and on
 * their drift interval. One sync at a time in this process. Failures wait with backoff and jitter;
 * `stop` lets the sync in flight finish its steps and release its lock.
 */
export class SyncAgent {
  private readonly sources = new Map<string, SourceState>();
  private readonly stacks = new Map<string, StackState>();
  private stopping = false;
  private readonly abort = new AbortController();
  private wakeUp: () => void = () => {};
  private nextPoll = 0;
  private readonly log: (line: string) => void;

  constructor(private readonly config: AgentConfig, private readonly ctx: Omit<SyncContext, 'signal'>, private readonly metrics: AgentMetrics, opts: { workDir: string; log?: (line: string) => void }) {
    for (const s of config.sources) {
      this.sources.set(s.name, { git: new GitSource(s, join(opts.workDir, s.name), ctx.env), nextFetch: 0, fetchedAt: 0, failures: 0, webhook: false, trigger: 'commit' });
    }
    this.log = opts.log ?? (() => {});
  }

  /** A push webhook: every source is fetched now. */
  webhook(): void {
    for (const s of this.sources.values()) {
      s.webhook = true;
      s.nextFetch = 0;
    }
    this.wakeUp();
  }

  status(): AgentStatus {
    const reasons: string[] = [];
    for (const [name, s] of this.sources) {
      if (s.error) reasons.push(`source ${name}: ${s.error}`);
      else if (!s.commit) reasons.push(`source ${name}: not fetched yet`);
    }
    for (const st of this.stacks.values()) if (st.error) reasons.push(`stack ${st.stack}: ${st.error}`);
    return { ready: reasons.length === 0, reasons };
  }

  stop(): void {
    this.stopping = true;
    this.abort.abort(new Error('stopping'));
    this.wakeUp();
  }

  async run(): Promise<void> {
    while (!this.stopping) {
      for (const s of this.sources.values()) {
        if (this.stopping) break;
        if (Date.now() >= s.nextFetch) await this.fetch(s);
      }
      if (!this.stopping && Date.now() >= this.nextPoll) await this.pollRequests();
      for (const st of this.stacks.values()) {
        if (this.stopping) break;
        const trigger = this.due(st, Date.now());
        if (trigger) await this.sync(st, trigger);
      }
      if (!this.stopping) await this.sleep(this.nextWake() - Date.now());
    }
  }

  private async fetch(s: SourceState): Promise<void> {
    const trigger: RunTrigger = s.webhook ? 'webhook' : 'commit';
    s.webhook = false;
    const started = Date.now();
    try {
      const commit = await s.git.fetch();
      if (commit.sha !== s.commit?.sha) s.trigger = trigger;
      s.commit = commit;
      s.fetchedAt = started;
      s.error = undefined;
      s.failures = 0;
      s.nextFetch = Date.now() + s.git.config.intervalMs;
      this.findStacks(s);
      // A failure of this source was recorded on these stacks: a check now records that it is over.
      for (const st of this.stacks.values()) if (st.source === s && st.recordedSourceError) st.lastCheck = 0;
      this.metrics.fetches.inc({ outcome: 'ok' });
    } catch (err) {
      s.failures++;
      s.error = (err as Error).message;
      s.nextFetch = Date.now() + Math.min(s.git.config.intervalMs, backoffMs(s.failures));
      this.metrics.fetches.inc({ outcome: 'failed' });
      this.metrics.failures.inc({ reason: 'git' });
      this.log(`fetch failed: ${s.error}`);
      await this.recordSourceFailure(s, trigger, started);
    }
  }

  /** An unreachable source is recorded on each of its stacks once per distinct failure. */
  private async recordSourceFailure(s: SourceState, trigger: RunTrigger, started: number): Promise<void> {
    for (const st of this.stacks.values()) {
      if (st.source !== s || st.recordedSourceError === s.error) continue;
      st.recordedSourceError = s.error;
      await recordRun(this.ctx.client, {
        stack: st.stack, commit: s.commit ?? null, trigger, holder: this.ctx.holder, duration_ms: Date.now() - started, outcome: 'failed',
        counts: { create: 0, update: 0, replace: 0, delete: 0 }, error: `${s.error}; the live state keeps the last commit synced`,
      }).catch((err: unknown) => this.log(`could not record the failure of stack ${st.stack}: ${(err as Error).message}`));
    }
  }

  /** The stack folders of each entry of this source: `path` itself when it holds edgeplane.yaml, else its folders that do. */
  private findStacks(s: SourceState): void {
    const seen = new Set<string>();
    for (const entry of this.config.stacks) {
      if (this.sources.get(entry.source) !== s) continue;
      const root = resolve(s.git.dir, entry.path);
      const dirs = isStackDir(root) ? [root] : existsSync(root) && statSync(root).isDirectory()
        ? readdirSync(root).map((n) => join(root, n)).filter((d) => statSync(d).isDirectory() && isStackDir(d)).sort()
        : [];
      for (const dir of dirs) {
        // A stack folder with environments is one stack per environment (docs/manifests.md, "Environments").
        let found: { stack: string; environment?: string }[];
        try {
          const envs = environmentNames(dir);
          found = envs.length ? envs.map((e) => ({ stack: selectEnvironment(dir, e).stack!, environment: e })) : [{ stack: resolveStack(dir).stack }];
        } catch (err) {
          this.log(`${dir}: ${(err as Error).message}`);
          continue;
        }
        for (const { stack, environment } of found) {
          const key = `${entry.source}\0${dir}${environment !== undefined ? `\0${environment}` : ''}`;
          seen.add(key);
          const known = this.stacks.get(key);
          if (known) {
            known.stack = stack;
            known.settings = entry;
          } else {
            this.stacks.set(key, { key, stack, dir, ...(environment !== undefined ? { environment } : {}), source: s, settings: entry, lastCheck: Date.now(), failures: 0, retryAt: 0, manual: false });
          }
        }
      }
    }
    for (const [key, st] of this.stacks) if (st.source === s && !seen.has(key)) this.stacks.delete(key);
  }

  /**
   * Asks the service which stacks have a sync asked for (`edgeplane sync STACK`): the summaries of
   * the account's stacks, a page per 100, every `REQUEST_POLL_MS` (or the shortest source interval).
   */
  private async pollRequests(): Promise<void> {
    this.nextPoll = Date.now() + Math.min(REQUEST_POLL_MS, ...this.config.sources.map((s) => s.intervalMs));
    if (!this.stacks.size) return;
    try {
      const asked = new Set((await listStacks(this.ctx.client)).filter((s) => s.sync_requested_at).map((s) => s.stack));
      for (const st of this.stacks.values()) if (!st.settings.suspend && asked.has(st.stack)) st.manual = true;
    } catch {
      // The service unreachable: the next poll asks again; syncs say why they fail.
    }
  }

  private due(st: StackState, now: number): RunTrigger | undefined {
    if (st.settings.suspend || !st.source.commit) return undefined;
    if (st.triedSha !== st.source.commit.sha && st.syncedSha !== st.source.commit.sha) return st.source.trigger;
    if (now < st.retryAt) return undefined;
    if (st.retryTrigger) return st.retryTrigger;
    if (st.syncedSha !== st.source.commit.sha) return st.source.trigger;
    if (st.manual) return 'manual';
    if (now >= st.lastCheck + st.settings.driftIntervalMs) return 'interval';
    return undefined;
  }

  private nextWake(): number {
    const times = [...[...this.sources.values()].map((s) => s.nextFetch), this.nextPoll];
    for (const st of this.stacks.values()) {
      if (st.settings.suspend) continue;
      times.push(st.retryAt > Date.now() ? st.retryAt : st.lastCheck + st.settings.driftIntervalMs);
    }
    return Math.min(...times);
  }

  private async sync(st: StackState, trigger: RunTrigger): Promise<void> {
    const commit = st.source.commit!;
    st.triedSha = commit.sha;
    const started = Date.now();
    let result: SyncResult;
    try {
      result = await syncStack({ ...this.ctx, signal: this.abort.signal }, { stack: st.stack, dir: st.dir, ...(st.environment !== undefined ? { environment: st.environment } : {}), commit, trigger, settings: st.settings, fetchedAt: st.refetched ? Infinity : st.source.fetchedAt });
      st.refetched = false;
    } catch (err) {
      // The service could not be reached or refused: retried with backoff.
      result = { outcome: 'failed', error: `the service: ${(err as Error).message}`, reason: 'service', drift: 0, recorded: false };
    }
    const now = Date.now();
    if (result.outcome === 'skipped') {
      if (result.kind === 'locked') {
        st.retryAt = now + backoffMs(1, Math.random) * (LOCKED_RETRY_MS / BACKOFF_BASE_MS);
        st.retryTrigger = trigger;
        return;
      }
      if (result.kind === 'stale') {
        this.log(`stack ${st.stack}: ${result.why}`);
        st.source.nextFetch = 0;
        st.triedSha = undefined;
        st.refetched = true;
        return;
      }
      this.settle(st, commit, now);
      this.log(`stack ${st.stack}: ${result.why}`);
      return;
    }
    this.metrics.duration.observe({ outcome: result.outcome }, (now - started) / 1000);
    this.metrics.syncs.inc({ outcome: result.outcome });
    this.metrics.drifted.set({ stack: st.stack }, result.drift);
    this.log(`stack ${st.stack}: ${trigger} ${commit.sha.slice(0, 10)} → ${result.outcome}${result.error ? `: ${result.error}` : ''}`);
    if (result.outcome === 'failed' || result.outcome === 'blocked') {
      if (this.stopping) return;
      st.failures++;
      st.error = `${result.outcome} at ${commit.sha.slice(0, 10)}: ${result.error ?? ''}`.slice(0, 1000);
      st.retryAt = now + backoffMs(st.failures);
      st.retryTrigger = trigger;
      st.lastCheck = now;
      this.metrics.failures.inc({ reason: result.reason ?? 'apply' });
      return;
    }
    this.settle(st, commit, now);
    this.metrics.lastSuccess.set({ stack: st.stack }, now / 1000);
  }

  private settle(st: StackState, commit: Commit, now: number): void {
    st.syncedSha = commit.sha;
    st.failures = 0;
    st.retryAt = 0;
    st.retryTrigger = undefined;
    st.error = undefined;
    st.manual = false;
    st.recordedSourceError = undefined;
    st.lastCheck = now;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(10, Math.min(ms, 60_000)));
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
  }
}

function isStackDir(dir: string): boolean {
  return STACK_FILES.some((f) => existsSync(join(dir, f)));
}
