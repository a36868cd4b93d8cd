import { randomBytes } from 'node:crypto';
import type { Db, Queryable } from './db.js';
import { newId } from '../util/ids.js';

/**
 * The job queue in the database, shared by every service process. A job is claimed with a lease
 * (FOR UPDATE SKIP LOCKED, so concurrent workers never claim the same job), then finished in one
 * transaction that re-locks the job, checks the lease is still this claim's, commits the job's
 * effect and marks it done. A worker that dies after claiming leaves the job to be claimed again
 * when the lease runs out; a worker whose lease was taken over cannot finish: the effect is
 * committed once, by one claim.
 */

export interface Job { id: string; type: string; object_id: string; attempts: number; lease_token: string }

/** A job's effect, run inside the finishing transaction; it must be conditional on the object's state. */
export type JobHandler = (q: Queryable, job: Job) => Promise<void>;

export async function enqueueJob(q: Queryable, type: string, objectId: string): Promise<string> {
  const id = newId('job');
  await q.query('INSERT INTO jobs (id, type, object_id) VALUES ($1, $2, $3)', [id, type, objectId]);
  return id;
}

export interface ClaimOptions { workerId: string; leaseMs: number; limit: number }

/** Claims up to `limit` ready jobs: queued and due, or running with an expired lease. */
export async function claimJobs(db: Queryable, opts: ClaimOptions): Promise<Job[]> {
  const token = randomBytes(12).toString('base64url');
  const { rows } = await db.query<Job>(
    `WITH ready AS (
       SELECT id FROM jobs
       WHERE (state = 'queued' AND run_after <= now()) OR (state = 'running' AND lease_until < now())
       ORDER BY id LIMIT $1
       FOR UPDATE SKIP LOCKED
     )
     UPDATE jobs j SET state = 'running', attempts = j.attempts + 1, lease_token = $2,
       lease_until = now() + make_interval(secs => $3), claimed_by = $4
     FROM ready WHERE j.id = ready.id
     RETURNING j.id, j.type, j.object_id, j.attempts, j.lease_token`,
    [opts.limit, token, opts.leaseMs / 1000, opts.workerId],
  );
  return rows.sort((a, b) => (a.id < b.id ? -1 : 1));
}

export type JobOutcome = 'done' | 'lost' | 'failed';

/**
 * Runs a claimed job's handler and marks it done, atomically. `lost`: the lease was taken over by
 * another worker (nothing committed here). `failed`: the handler threw; the job is queued again
 * with backoff.
 */
export async function finishJob(db: Db, job: Job, handlers: Record<string, JobHandler>, workerId: string): Promise<JobOutcome> {
  try {
    return await db.tx(async (q) => {
      const { rows } = await q.query(
        `SELECT id FROM jobs WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR UPDATE`,
        [job.id, job.lease_token],
      );
      if (!rows.length) return 'lost';
      const handler = handlers[job.type];
      if (!handler) throw new Error(`no handler for job type ${job.type}`);
      await handler(q, job);
      await q.query(
        `UPDATE jobs SET state = 'done', completions = completions + 1, finished_at = now(), finished_by = $2,
           lease_token = NULL, lease_until = NULL, last_error = NULL
         WHERE id = $1`,
        [job.id, workerId],
      );
      return 'done' as const;
    });
  } catch (err) {
    // Exponential backoff, capped: a job that keeps failing is retried, never dropped.
    const delay = Math.min(2 ** job.attempts, 300);
    await db.query(
      `UPDATE jobs SET state = 'queued', run_after = now() + make_interval(secs => $3), last_error = $4,
         lease_token = NULL, lease_until = NULL
       WHERE id = $1 AND lease_token = $2 AND state = 'running'`,
      [job.id, job.lease_token, delay, String((err as Error).message ?? err).slice(0, 1000)],
    );
    return 'failed';
  }
}

/** A worker id that tells processes apart in `jobs.claimed_by` / `finished_by`. */
export function workerIdentity(host: string, pid: number): string {
  return `${host}:${pid}:${randomBytes(3).toString('hex')}`;
}
