import { PROCESS_ABUSE_REPORT, type ReportHostname } from './abuse-states.js';
import { reportedHostnames } from './abuse-urls.js';
import { metadata } from './fields.js';
import type { KindDef } from './types.js';

export const abuseReport: KindDef = {
  name: 'abuseReport',
  title: 'abuse report',
  idPrefix: 'abrp',
  path: '/abuse_reports',
  operations: ['create', 'get'],
  requires: 'abuseReports',
  fields: {
    urls: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string', minLength: 1, maxBytes: 4096 } },
    metadata,
  },
  required: ['urls'],
  immutable: ['urls'],
  derived: ['status', 'hostnames'],
  derivedSchemas: {
    status: { type: 'string', enum: ['PENDING', 'PARTIALLY_PROCESSED', 'PROCESSED'] },
    hostnames: {
      type: 'array',
      items: {
        type: 'object',
        properties: { hostname: { type: 'string' }, status: { type: 'string', enum: ['PENDING', 'BANNED', 'UNBANNED', 'IGNORE'] } },
        additionalProperties: false,
      },
    },
  },
  responseOrder: ['urls', 'metadata', 'status', 'hostnames'],
  hooks: {
    prepare(ctx) {
      if (ctx.op !== 'create') return;
      const hostnames: ReportHostname[] = reportedHostnames(ctx.body.urls as string[]).map((hostname) => ({ hostname, status: 'PENDING' }));
      Object.assign(ctx.body, { status: 'PENDING', hostnames });
    },
  },
  // Processing is asynchronous: the job commits with the report, so no report is ever unqueued.
  effects: [{ type: 'enqueueJob', job: PROCESS_ABUSE_REPORT, on: 'create' }],
};
