import { PROCESS_ABUSE_REPORT } from '../kinds/abuse-states.js';
import { processAbuseReport } from './routes/abuse-reports.js';
import type { JobHandler } from '../store/job-queue.js';

/** Every background job type and what runs it. */
export const JOB_HANDLERS: Record<string, JobHandler> = {
  [PROCESS_ABUSE_REPORT]: processAbuseReport,
};
