import { hostname } from 'node:os';
import type { Db } from '../store/db.js';
import { JOB_HANDLERS } from './job-handlers.js';
import { claimJobs, finishJob, workerIdentity, type Job, type JobHandler, type JobOutcome } from '../store/job-queue.js';

export interface WorkerOptions {
  /** How long a claim lasts before another worker may take the job over. Default 30 s. */
  leaseMs?: number;
  /** Idle wait between polls. Default 250 ms. */
  pollMs?: number;
  /** Jobs claimed at once. Default 10. */
  batch?: number;
  /** Waits this long between claiming and finishing each job: a knob for crash-recovery tests. */
  delayMs?: number;
  workerId?: string;
  handlers?: Record<string, JobHandler>;
  /** Where problems are reported (the server passes its pino logger); the library never prints. */
  log?: { warn(obj: object, msg: string): void; debug?(obj: object, msg: string): void };
  /** Told how each job ended (metrics count them). */
  onOutcome?(job: Job, outcome: JobOutcome): void;
}

export interface JobWorker {
  readonly id: string;
  /** Poll now instead of at the end of the idle wait. */
  wake(): void;
  /** Stops claiming, waits for the jobs in hand to finish. */
  stop(): Promise<void>;
}

/** Runs every ready job until none is left (tests, and the embedded service on demand). */
export async function drainJobs(db: Db, opts: Pick<WorkerOptions, 'handlers' | 'workerId' | 'leaseMs'> = {}): Promise<number> {
  const workerId = opts.workerId ?? workerIdentity(hostname(), process.pid);
  let done = 0;
  for (;;) {
    const jobs = await claimJobs(db, { workerId, leaseMs: opts.leaseMs ?? 30_000, limit: 50 });
    if (!jobs.length) return done;
    for (const job of jobs) if ((await finishJob(db, job, opts.handlers ?? JOB_HANDLERS, workerId)) === 'done') done++;
  }
}

/** A background loop claiming and running jobs; every `serve` process runs one. */
export function startJobWorker(db: Db, opts: WorkerOptions = {}): JobWorker {
  const id = opts.workerId ?? workerIdentity(hostname(), process.pid);
  const leaseMs = opts.leaseMs ?? 30_000;
  const pollMs = opts.pollMs ?? 250;
  const handlers = opts.handlers ?? JOB_HANDLERS;
  let stopped = false;
  let wakeUp: (() => void) | null = null;
  const idle = (ms: number) => new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() { clearTimeout(t); wakeUp = null; resolve(); }
    wakeUp = done;
  });

  const loop = (async () => {
    let failures = 0;
    while (!stopped) {
      try {
        const jobs = await claimJobs(db, { workerId: id, leaseMs, limit: opts.batch ?? 10 });
        failures = 0;
        for (const job of jobs) {
          // Shutting down: the job being run is finished, the rest of the batch is left to its
          // lease running out (another process takes it over then).
          if (stopped) break;
          if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
          const outcome: JobOutcome = await finishJob(db, job, handlers, id);
          opts.onOutcome?.(job, outcome);
          if (outcome !== 'done') opts.log?.warn({ job_id: job.id, type: job.type, attempts: job.attempts, outcome }, `job ${outcome}`);
        }
        if (!jobs.length) await idle(pollMs);
      } catch (err) {
        // The database is unreachable or restarting: back off, keep the process up.
        failures++;
        opts.log?.warn({ err, worker: id }, 'job worker poll failed');
        await idle(Math.min(pollMs * 2 ** failures, 30_000));
      }
    }
  })();

  return {
    id,
    wake: () => wakeUp?.(),
    async stop() {
      stopped = true;
      wakeUp?.();
      await loop;
    },
  };
}
