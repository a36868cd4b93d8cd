import type { Db, Queryable } from './db.js';

/** What a run ended as; the stack's status follows from the last one (`STATUS_OF`). */
export const OUTCOMES = ['applied', 'no_changes', 'drifted', 'failed', 'blocked'] as const;
export type Outcome = (typeof OUTCOMES)[number];
export const TRIGGERS = ['commit', 'interval', 'webhook', 'manual', 'cli'] as const;
export type Trigger = (typeof TRIGGERS)[number];
export type SyncStatus = 'synced' | 'out_of_sync' | 'failed' | 'unknown';

/** The stack's status after a run with this outcome. */
export const STATUS_OF: Record<Outcome, SyncStatus> = {
  applied: 'synced',
  no_changes: 'synced',
  drifted: 'out_of_sync',
  failed: 'failed',
  blocked: 'failed',
};

/** `drift`: the plan marked the change as drift (absent: a record written before plans marked it). */
export interface RunObject { identity: string; action: string; fields: string[]; drift?: boolean }

export interface RunCounts { create: number; update: number; replace: number; delete: number }

/** What the stack's policies found in the run's plan, and the overrides it ran with (`--override-policy`). */
export interface RunPolicy { denied: number; warned: number; overrides: { policy: string; reason: string }[] }

export interface NewRun {
  id: string;
  accountId: string;
  stack: string;
  commit: { sha: string; subject?: string; author?: string } | null;
  trigger: Trigger;
  holder: string;
  /** How long the run took by the runner's clock: `started_at` is the database's now minus this. */
  durationMs: number;
  outcome: Outcome;
  counts: RunCounts;
  driftCount: number | null;
  error: string | null;
  planMarkdown: string | null;
  /** The objects the plan changed, with the fields that differ (bounded by the route's schema). */
  objects: RunObject[] | null;
  policy: RunPolicy | null;
}

export interface RunRow {
  id: string;
  stack: string;
  commit_sha: string | null;
  commit_subject: string | null;
  commit_author: string | null;
  trigger: Trigger;
  holder: string;
  started_at: Date;
  finished_at: Date;
  outcome: Outcome;
  counts: RunCounts;
  drift_count: number | null;
  error: string | null;
  plan_markdown?: string | null;
  objects?: RunObject[] | null;
  policy: RunPolicy | null;
}

export interface StackRow {
  stack: string;
  live_sha: string | null;
  live_subject: string | null;
  live_author: string | null;
  live_since: Date | null;
  status: SyncStatus;
  drift_count: number | null;
  sync_requested_at: Date | null;
  sync_requested_by: string | null;
  last_run_id: string | null;
  last_run_outcome: Outcome | null;
  last_run_trigger: Trigger | null;
  last_run_finished_at: Date | null;
  last_run_commit_sha: string | null;
  lock_holder: string | null;
  lock_created_at: Date | null;
  lock_expires_at: Date | null;
}

const RUN_COLS = 'id, stack, commit_sha, commit_subject, commit_author, trigger, holder, started_at, finished_at, outcome, counts, drift_count, error, policy';

/**
 * Records a run and moves its stack's summary on, in one transaction with the stack's row locked
 * (two runners of one stack write one after the other): the last run and status; the live commit
 * when the run made (or found) the live state equal to a commit; a sync asked for before the run
 * started is answered by it. Then the stack's runs beyond `keep` are deleted, oldest first.
 */
export async function recordRun(db: Db, run: NewRun, keep: number): Promise<RunRow> {
  return db.tx(async (q) => {
    await q.query('INSERT INTO sync_stacks (account_id, stack) VALUES ($1, $2) ON CONFLICT DO NOTHING', [run.accountId, run.stack]);
    await q.query('SELECT 1 FROM sync_stacks WHERE account_id = $1 AND stack = $2 FOR UPDATE', [run.accountId, run.stack]);
    const { rows } = await q.query<RunRow>(
      `INSERT INTO sync_runs (id, account_id, stack, commit_sha, commit_subject, commit_author, trigger, holder, started_at, outcome, counts, drift_count, error, plan_markdown, objects, policy)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() - make_interval(secs => $9::double precision / 1000), $10, $11, $12, $13, $14, $15, $16)
       RETURNING ${RUN_COLS}`,
      [run.id, run.accountId, run.stack, run.commit?.sha ?? null, run.commit?.subject ?? null, run.commit?.author ?? null, run.trigger, run.holder,
        run.durationMs, run.outcome, JSON.stringify(run.counts), run.driftCount, run.error, run.planMarkdown, run.objects === null ? null : JSON.stringify(run.objects), run.policy === null ? null : JSON.stringify(run.policy)],
    );
    const row = rows[0];
    const status = STATUS_OF[run.outcome];
    // Applied: the live state is now this commit's (or, with no commit known, no commit's).
    // No changes: it already was; with no commit given, whatever was live still is.
    const live = run.outcome === 'applied' ? 'set' : run.outcome === 'no_changes' && run.commit ? 'set' : 'keep';
    await q.query(
      `UPDATE sync_stacks SET
         last_run_id = $3, status = $4, drift_count = $5,
         live_sha = CASE WHEN $6 THEN $7 ELSE live_sha END,
         live_subject = CASE WHEN $6 THEN $8 ELSE live_subject END,
         live_author = CASE WHEN $6 THEN $9 ELSE live_author END,
         live_since = CASE WHEN $6 AND (live_sha IS DISTINCT FROM $7 OR $10) THEN $11 ELSE live_since END,
         sync_requested_by = CASE WHEN sync_requested_at <= $12 AND $13 THEN NULL ELSE sync_requested_by END,
         sync_requested_at = CASE WHEN sync_requested_at <= $12 AND $13 THEN NULL ELSE sync_requested_at END
       WHERE account_id = $1 AND stack = $2`,
      [run.accountId, run.stack, row.id, status, status === 'synced' ? 0 : run.driftCount, live === 'set',
        run.commit?.sha ?? null, run.commit?.subject ?? null, run.commit?.author ?? null, run.outcome === 'applied', row.finished_at, row.started_at,
        // A drift check does not answer a sync asked for: in `drift: report` it changes nothing.
        run.trigger !== 'interval'],
    );
    await q.query(
      `DELETE FROM sync_runs WHERE account_id = $1 AND stack = $2 AND id < (
         SELECT id FROM sync_runs WHERE account_id = $1 AND stack = $2 ORDER BY id DESC OFFSET $3 LIMIT 1)`,
      [run.accountId, run.stack, keep - 1],
    );
    return row;
  });
}

export async function getRun(q: Queryable, accountId: string, id: string): Promise<RunRow | null> {
  const { rows } = await q.query<RunRow>(`SELECT ${RUN_COLS}, plan_markdown, objects FROM sync_runs WHERE account_id = $1 AND id = $2`, [accountId, id]);
  return rows[0] ?? null;
}

/** Runs newest first (of one stack, or of every stack), strictly older than `beforeId`; without their plans. */
export async function listRuns(q: Queryable, accountId: string, opts: { stack?: string; limit: number; beforeId?: string }): Promise<{ rows: RunRow[]; more: boolean }> {
  const params: unknown[] = [accountId, opts.limit + 1];
  let where = 'account_id = $1';
  if (opts.stack !== undefined) {
    params.push(opts.stack);
    where += ` AND stack = $${params.length}`;
  }
  if (opts.beforeId !== undefined) {
    params.push(opts.beforeId);
    where += ` AND id < $${params.length}`;
  }
  const { rows } = await q.query<RunRow>(`SELECT ${RUN_COLS} FROM sync_runs WHERE ${where} ORDER BY id DESC LIMIT $2`, params);
  return { rows: rows.slice(0, opts.limit), more: rows.length > opts.limit };
}

/**
 * The summaries of the account's stacks in name order, after `after`: every stack with a run or a
 * sync asked for, and every stack with a live lock, with its last run and its live lock.
 */
export async function listStacks(q: Queryable, accountId: string, opts: { limit: number; after?: string; stack?: string }): Promise<{ rows: StackRow[]; more: boolean }> {
  const params: unknown[] = [accountId, opts.limit + 1];
  let filter = '';
  if (opts.stack !== undefined) {
    params.push(opts.stack);
    filter = ` AND n.stack = $${params.length}`;
  } else if (opts.after !== undefined) {
    params.push(opts.after);
    filter = ` AND n.stack > $${params.length}`;
  }
  const { rows } = await q.query<StackRow>(
    `WITH names AS (
       SELECT stack FROM sync_stacks WHERE account_id = $1
       UNION SELECT stack COLLATE "C" FROM stack_locks WHERE account_id = $1 AND expires_at > now())
     SELECT n.stack, s.live_sha, s.live_subject, s.live_author, s.live_since, coalesce(s.status, 'unknown') AS status, s.drift_count,
            s.sync_requested_at, s.sync_requested_by, s.last_run_id,
            r.outcome AS last_run_outcome, r.trigger AS last_run_trigger, r.finished_at AS last_run_finished_at, r.commit_sha AS last_run_commit_sha,
            l.holder AS lock_holder, l.created_at AS lock_created_at, l.expires_at AS lock_expires_at
     FROM names n
     LEFT JOIN sync_stacks s ON s.account_id = $1 AND s.stack = n.stack
     LEFT JOIN sync_runs r ON r.account_id = $1 AND r.id = s.last_run_id
     LEFT JOIN stack_locks l ON l.account_id = $1 AND l.stack = n.stack AND l.expires_at > now()
     WHERE true${filter}
     ORDER BY n.stack LIMIT $2`,
    params,
  );
  return { rows: rows.slice(0, opts.limit), more: rows.length > opts.limit };
}

/** Asks the stack's agents for a sync now: the first run that starts after this answers it. */
export async function requestSync(q: Queryable, accountId: string, stack: string, by: string | null): Promise<void> {
  await q.query(
    `INSERT INTO sync_stacks (account_id, stack, sync_requested_at, sync_requested_by) VALUES ($1, $2, now(), $3)
     ON CONFLICT (account_id, stack) DO UPDATE SET sync_requested_at = now(), sync_requested_by = $3`,
    [accountId, stack, by],
  );
}
