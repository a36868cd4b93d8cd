import {
  coveringWildcards, DECISIONS, reportStatus, type Decision, type ReportHostname, type ReportStatus,
} from '../../kinds/abuse-states.js';
import type { Db, Queryable } from '../../store/db.js';
import { updateBody, type ObjectRow } from '../../store/objects.js';
import { rfc3339 } from '../../util/time.js';
import { ApiError } from '../../contract/errors.js';
import type { Job } from '../../store/job-queue.js';

/** A report's row: its own queries read `created_at` as the driver's `Date`, `updateBody` as RFC 3339 text. */
type ReportRow = Omit<ObjectRow, 'created_at' | 'version'> & { created_at: Date | string };

/** The `unique_keys` scope in which edges record their hostports (`host:port`, lower case). */
export const HOSTPORT_SCOPE = 'hostport';
const KIND = 'abuseReport';

// ——— which hostnames are served, which are banned ———

/** The hostnames (of those given) that some edge serves, directly or through a wildcard hostport. */
export async function servedHostnames(q: Queryable, hostnames: string[]): Promise<Set<string>> {
  if (!hostnames.length) return new Set();
  const pairs = hostnames.flatMap((h) => [h, ...coveringWildcards(h)].map((c) => [h, c + ':']));
  const { rows } = await q.query<{ hostname: string }>(
    `SELECT DISTINCT c.hostname FROM unnest($1::text[], $2::text[]) AS c(hostname, prefix)
     WHERE EXISTS (SELECT 1 FROM unique_keys u WHERE u.scope = $3 AND starts_with(u.value, c.prefix))`,
    [pairs.map((p) => p[0]), pairs.map((p) => p[1]), HOSTPORT_SCOPE],
  );
  return new Set(rows.map((r) => r.hostname));
}

/**
 * Serialises a ban decision against edges adding the hostname: a ban takes these keys exclusively
 * (the hostname and every wildcard covering it), an edge write takes its hosts' keys shared. Keys
 * are taken in sorted order so the two sides cannot deadlock.
 */
async function lockHostKeys(q: Queryable, hosts: string[], shared: boolean): Promise<void> {
  const fn = shared ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
  for (const key of [...new Set(hosts)].sort()) await q.query(`SELECT ${fn}(hashtext($1))`, ['hostname-ban:' + key]);
}

function hostOf(hostport: string): string {
  const i = hostport.lastIndexOf(':');
  return (i > 0 ? hostport.slice(0, i) : hostport).toLowerCase().replace(/\.$/, '');
}

/**
 * 409 when one of `hostports` would serve a banned hostname: the hostname itself, or a wildcard
 * (`*.example.com:443`) covering it. Edges declare it as an effect
 * (`hostportsNotBanned`, `effects.ts`): it runs in their write transaction, for the hostports they add.
 */
export async function assertHostportsNotBanned(q: Queryable, hostports: string[]): Promise<void> {
  if (!hostports.length) return;
  const hosts = hostports.map(hostOf);
  await lockHostKeys(q, hosts, true);
  const { rows } = await q.query<{ hostport: string; hostname: string }>(
    `SELECT h.hostport, b.hostname FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS h(hostport, host, n)
     JOIN hostname_bans b ON b.hostname = h.host
       OR (left(h.host, 2) = '*.' AND right(b.hostname, length(h.host) - 1) = substr(h.host, 2))
     ORDER BY h.n, b.hostname LIMIT 1`,
    [hostports, hosts],
  );
  if (rows[0]) {
    const { hostport, hostname } = rows[0];
    const how = hostOf(hostport) === hostname ? '' : ` (the wildcard covers ${hostname})`;
    throw new ApiError(
      'ERR_HOSTNAME_BANNED',
      `hostports: ${hostport} cannot be served: the hostname ${hostname} is banned after an abuse report${how}; contact the operator's abuse team`,
      { hostname },
    );
  }
}

export async function bannedHostnames(q: Queryable, hostnames: string[]): Promise<Set<string>> {
  const { rows } = await q.query<{ hostname: string }>('SELECT hostname FROM hostname_bans WHERE hostname = ANY($1)', [hostnames]);
  return new Set(rows.map((r) => r.hostname));
}

// ——— the processing job ———

async function lockReport(q: Queryable, id: string): Promise<ReportRow | null> {
  const { rows } = await q.query<ReportRow>(
    `SELECT id, account_id, kind, parent_id, created_at, body FROM objects WHERE id = $1 AND kind = $2 FOR UPDATE`,
    [id, KIND],
  );
  return rows[0] ?? null;
}

/**
 * The job run for each new report. Only hostnames still PENDING and only a report not yet
 * processed are touched, so running it again (after a crash, or an operator decision made before
 * it ran) changes nothing that is already decided.
 */
export async function processAbuseReport(q: Queryable, job: Pick<Job, 'object_id'>): Promise<void> {
  const row = await lockReport(q, job.object_id);
  if (!row || row.body.processed_at) return;
  const hostnames = row.body.hostnames as ReportHostname[];
  const open = hostnames.filter((h) => h.status === 'PENDING').map((h) => h.hostname);
  const [served, banned] = await Promise.all([servedHostnames(q, open), bannedHostnames(q, open)]);
  const next = hostnames.map((h): ReportHostname => {
    if (h.status !== 'PENDING') return h;
    if (banned.has(h.hostname)) return { hostname: h.hostname, status: 'BANNED' };
    return { hostname: h.hostname, status: served.has(h.hostname) ? 'PENDING' : 'IGNORE' };
  });
  await updateBody(q, row.id, { ...row.body, hostnames: next, status: reportStatus(next), processed_at: rfc3339(new Date()) });
}

// ——— operator functions (`edgeplane admin abuse …`) ———

export interface AbuseReportSummary {
  id: string;
  account_id: string;
  created_at: string;
  status: ReportStatus;
  /** False until the processing job has run. */
  processed: boolean;
  urls: string[];
  metadata?: string;
  hostnames: ReportHostname[];
}

function summary(row: ReportRow): AbuseReportSummary {
  const b = row.body;
  return {
    id: row.id,
    account_id: row.account_id,
    created_at: rfc3339(row.created_at),
    status: b.status as ReportStatus,
    processed: !!b.processed_at,
    urls: b.urls as string[],
    ...(b.metadata !== undefined ? { metadata: b.metadata as string } : {}),
    hostnames: b.hostnames as ReportHostname[],
  };
}

/** Reports of every account, oldest first, optionally of one status. */
export async function listAbuseReports(db: Queryable, opts: { status?: ReportStatus; limit?: number; afterId?: string } = {}): Promise<AbuseReportSummary[]> {
  const { rows } = await db.query<ReportRow>(
    `SELECT id, account_id, kind, parent_id, created_at, body FROM objects
     WHERE kind = $1 AND ($2::text IS NULL OR body ->> 'status' = $2) AND ($3::text IS NULL OR id > $3)
     ORDER BY id LIMIT $4`,
    [KIND, opts.status ?? null, opts.afterId ?? null, opts.limit ?? 1000],
  );
  return rows.map(summary);
}

export class AbuseDecisionError extends Error {
  constructor(msg: string) {
    super(msg);
    this.name = 'AbuseDecisionError';
  }
}

export interface DecisionResult { report: AbuseReportSummary; hostname: string; from: string; to: string; changed: boolean }

/**
 * An operator's decision on one hostname of one report. BANNED adds the hostname to the service-
 * wide ban list, UNBANNED removes it; the report records the decision. Deciding what is already
 * decided is a no-op; a transition the state machine does not allow is refused.
 */
export async function decideAbuseHostname(db: Db, reportId: string, hostname: string, decision: Decision): Promise<DecisionResult> {
  const wanted = hostname.trim().toLowerCase().replace(/\.$/, '');
  const { to, from } = DECISIONS[decision];
  return db.tx(async (q) => {
    const row = await lockReport(q, reportId);
    if (!row) throw new AbuseDecisionError(`abuse report ${reportId} not found`);
    const hostnames = row.body.hostnames as ReportHostname[];
    const entry = hostnames.find((h) => h.hostname === wanted);
    if (!entry) {
      throw new AbuseDecisionError(`abuse report ${reportId} has no hostname ${wanted}; its hostnames: ${hostnames.map((h) => h.hostname).join(', ')}`);
    }
    const before = entry.status;
    if (before === to) return { report: summary(row), hostname: wanted, from: before, to, changed: false };
    if (!from.includes(before)) {
      throw new AbuseDecisionError(`${wanted} on ${reportId} is ${before}; --${decision} applies to ${from.join(' or ')} hostnames`);
    }
    if (to === 'BANNED' || to === 'UNBANNED') await lockHostKeys(q, [wanted, ...coveringWildcards(wanted)], false);
    if (to === 'BANNED') {
      await q.query('INSERT INTO hostname_bans (hostname, report_id) VALUES ($1, $2) ON CONFLICT (hostname) DO NOTHING', [wanted, reportId]);
    } else if (to === 'UNBANNED') {
      await q.query('DELETE FROM hostname_bans WHERE hostname = $1', [wanted]);
    }
    const next = hostnames.map((h) => (h.hostname === wanted ? { hostname: wanted, status: to } : h));
    const updated = await updateBody(q, row.id, { ...row.body, hostnames: next, status: reportStatus(next) });
    return { report: summary(updated), hostname: wanted, from: before, to, changed: true };
  });
}
