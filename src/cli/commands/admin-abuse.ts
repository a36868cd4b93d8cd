import { REPORT_STATUSES, type Decision, type ReportStatus } from '../../kinds/abuse-states.js';
import { decideAbuseHostname, listAbuseReports } from '../../service/routes/abuse-reports.js';
import { CliExit, EXIT } from '../exit.js';
import type { Output } from '../output.js';
import { withDb } from './with-db.js';

export interface AbuseListFlags { status?: string; limit?: string; json?: boolean; state?: string }

export async function abuseList(out: Output, flags: AbuseListFlags) {
  let status: ReportStatus | undefined;
  if (flags.status) {
    status = flags.status.toUpperCase() as ReportStatus;
    if (!REPORT_STATUSES.includes(status)) throw new CliExit(EXIT.error, `--status: must be one of ${REPORT_STATUSES.join(', ')}`);
  }
  const limit = flags.limit === undefined ? 1000 : Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new CliExit(EXIT.error, '--limit: must be a positive integer');
  const reports = await withDb({ stateDir: flags.state }, (db) => listAbuseReports(db, { status, limit }));
  if (flags.json) return out.json(reports);
  if (!reports.length) return out.line(status ? `no ${status} abuse reports` : 'no abuse reports');
  for (const r of reports) {
    out.line(`${r.id}  ${r.status}${r.processed ? '' : ' (queued)'}  account ${r.account_id}  ${r.created_at}`);
    for (const h of r.hostnames) out.line(`  ${h.status.padEnd(9)} ${h.hostname}`);
  }
}

export interface AbuseDecideFlags { ban?: boolean; unban?: boolean; ignore?: boolean; json?: boolean; state?: string }

export async function abuseDecide(out: Output, reportId: string, hostname: string, flags: AbuseDecideFlags) {
  const chosen = (['ban', 'unban', 'ignore'] as Decision[]).filter((d) => flags[d]);
  if (chosen.length !== 1) throw new CliExit(EXIT.error, 'give exactly one of --ban, --unban, --ignore');
  const result = await withDb({ stateDir: flags.state }, (db) => decideAbuseHostname(db, reportId, hostname, chosen[0]));
  if (flags.json) return out.json(result);
  out.line(result.changed
    ? `${result.hostname} on ${reportId}: ${result.from} → ${result.to}; report is ${result.report.status}`
    : `${result.hostname} on ${reportId} is already ${result.to}; nothing changed`);
}
