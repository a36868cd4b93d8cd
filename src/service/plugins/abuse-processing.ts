import fp from 'fastify-plugin';
import { startJobWorker, type JobWorker, type WorkerOptions } from '../job-worker.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** This process's background job worker (abuse report processing); null when it runs none. */
    jobWorker: JobWorker | null;
  }
}

export type JobWorkerSettings = Omit<WorkerOptions, 'log' | 'onOutcome'>;

/**
 * Abuse report processing: the background worker claiming jobs from the queue in the database
 * (every replica runs one; they share the work). It starts when the app is ready and stops, its
 * jobs in hand finished, when the app closes, before the database is closed by its owner.
 */
export const abuseProcessingPlugin = fp<{ worker: JobWorkerSettings | false }>(async (app, opts) => {
  app.decorate('jobWorker', null);
  if (!opts.worker) return;
  const settings = opts.worker;
  app.addHook('onReady', async () => {
    app.jobWorker = startJobWorker(app.db, {
      ...settings,
      log: app.log,
      onOutcome: (job, outcome) => app.metrics?.jobOutcomes.inc({ type: job.type, outcome }),
    });
  });
  app.addHook('onClose', async () => {
    await app.jobWorker?.stop();
  });
}, { name: 'edgeplane-abuse-processing', dependencies: ['edgeplane-database', 'edgeplane-metrics'] });
