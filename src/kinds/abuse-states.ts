/**
 * The abuse report state machine, as data (docs/abuse-reports.md describes it for people).
 *
 * A hostname starts PENDING. The processing job (src/service/routes/abuse-reports.ts) moves it to IGNORE
 * when no edge serves it, to BANNED when it is already banned, and leaves it PENDING (now awaiting
 * an operator) when an edge serves it. Operators move it along HOSTNAME_TRANSITIONS.
 */
export type HostnameStatus = 'PENDING' | 'BANNED' | 'UNBANNED' | 'IGNORE';
export type ReportStatus = 'PENDING' | 'PARTIALLY_PROCESSED' | 'PROCESSED';
export const REPORT_STATUSES: ReportStatus[] = ['PENDING', 'PARTIALLY_PROCESSED', 'PROCESSED'];

export interface ReportHostname { hostname: string; status: HostnameStatus }

/** Operator decisions: the target status of each, and the statuses it may be taken from. */
export type Decision = 'ban' | 'unban' | 'ignore';
export const DECISIONS: Record<Decision, { to: HostnameStatus; from: HostnameStatus[] }> = {
  // IGNORE → BANNED: an ignored hostname may be served later, or the operator knows better.
  ban: { to: 'BANNED', from: ['PENDING', 'IGNORE', 'UNBANNED'] },
  unban: { to: 'UNBANNED', from: ['BANNED'] },
  ignore: { to: 'IGNORE', from: ['PENDING'] },
};

/** PENDING while every hostname is pending, PROCESSED when none is, PARTIALLY_PROCESSED between. */
export function reportStatus(hostnames: ReportHostname[]): ReportStatus {
  const pending = hostnames.filter((h) => h.status === 'PENDING').length;
  if (pending === hostnames.length) return 'PENDING';
  return pending === 0 ? 'PROCESSED' : 'PARTIALLY_PROCESSED';
}

/** The job type that processes a new report. */
export const PROCESS_ABUSE_REPORT = 'abuseReport.process';

/**
 * `a.b.example.com` → `*.b.example.com`, `*.example.com`, `*.com`: the wildcard hosts that cover
 * it. A wildcard hostport covers subdomains at any depth (the safer reading for abuse handling).
 */
export function coveringWildcards(hostname: string): string[] {
  const labels = hostname.split('.');
  const out: string[] = [];
  for (let i = 1; i < labels.length; i++) out.push('*.' + labels.slice(i).join('.'));
  return out;
}
