import type { FastifyInstance, FastifyRequest, HTTPMethods } from 'fastify';
import type { Db } from '../../store/db.js';
import { getRun, listRuns, listStacks, OUTCOMES, recordRun, requestSync, TRIGGERS, type RunRow, type RunObject, type StackRow, type NewRun, type RunPolicy } from '../../store/sync-runs.js';
import { idPattern, newId } from '../../util/ids.js';
import { isStorableText } from '../../util/text.js';
import { rfc3339 } from '../../util/time.js';
import { ApiError } from '../../contract/errors.js';
import { STACK_NAME } from '../../contract/stack-name.js';
import { runIdempotent, type IdempotencyOptions } from '../writes/idempotency.js';
import { registerMethodNotAllowed, type OperationDoc } from './kind-routes.js';
import type { Caller } from '../writes/resources.js';
import { ownStack } from './stack-locks.js';

export const SYNC_RUNS_PATH = '/sync_runs';
export const STACKS_PATH = '/stacks';
export const SYNC_RUN_PREFIX = 'syncrun';
/** Runs kept per stack when the app is given no other number: the oldest beyond it are deleted as a new one is written. */
export const DEFAULT_RUNS_PER_STACK = 200;
/** Characters of a run's plan: the Markdown comment's budget (65,000) and room to spare. */
export const PLAN_MARKDOWN_MAX = 65_536;
const ERROR_MAX = 8_000;
const MAX_DURATION_MS = 7 * 24 * 3600 * 1000;

export interface SyncRecordOptions {
  /** Runs kept per stack (`DEFAULT_RUNS_PER_STACK` without it). */
  runsPerStack?: number;
}

const stackName = { type: 'string', pattern: STACK_NAME.source, description: 'The stack: lower-case letters, digits, ".", "_" or "-" (1-64 characters)' };
const count = { type: 'integer', minimum: 0, maximum: 10_000_000 };
const COUNTS_SCHEMA = {
  type: 'object', additionalProperties: false, required: ['create', 'update', 'replace', 'delete'],
  properties: { create: count, update: count, replace: count, delete: count },
  description: 'The steps of the run\'s plan, per action',
};
const COMMIT_IN = {
  type: ['object', 'null'], additionalProperties: false, required: ['sha'],
  properties: {
    sha: { type: 'string', pattern: '^[0-9a-f]{7,64}$', description: 'The commit\'s hash (hex, lower case)' },
    subject: { type: 'string', maxLength: 1000 },
    author: { type: 'string', maxLength: 500 },
  },
};
/** The most objects a run lists, and fields per object. */
export const RUN_OBJECTS_MAX = 500;
const RUN_OBJECT = {
  type: 'object', additionalProperties: false, required: ['identity', 'action', 'fields'],
  properties: {
    identity: { type: 'string', minLength: 1, maxLength: 300, description: 'The object\'s manifest identity: HTTPSEdge/web, HTTPSEdge/web/routes/api' },
    action: { type: 'string', minLength: 1, maxLength: 40, description: 'create, update, replace, delete, module.put, module.delete' },
    fields: { type: 'array', maxItems: 50, items: { type: 'string', maxLength: 200 }, description: 'The field paths that differ (none for a create or delete)' },
    drift: { type: 'boolean', description: 'The plan marked the change as drift: the live object moved away from what the stack last applied (false: a change of the manifests not yet applied; absent: not known)' },
  },
};
const POLICY_IN = {
  type: ['object', 'null'], additionalProperties: false, required: ['denied', 'warned', 'overrides'],
  description: 'What the stack\'s policies found in the plan (failed rules that deny, that warn), and the policies let through with --override-policy and why; null: the stack has no policies',
  properties: {
    denied: { type: 'integer', minimum: 0, maximum: 10_000_000 },
    warned: { type: 'integer', minimum: 0, maximum: 10_000_000 },
    overrides: {
      type: 'array', maxItems: 100,
      items: { type: 'object', additionalProperties: false, required: ['policy', 'reason'], properties: { policy: { type: 'string', minLength: 1, maxLength: 64 }, reason: { type: 'string', minLength: 1, maxLength: 500 } } },
    },
  },
};
const OBJECTS_IN = { type: ['array', 'null'], maxItems: RUN_OBJECTS_MAX, items: RUN_OBJECT, description: 'The objects the plan changed (a drift check: found changed), each with the fields that differ' };
const CREATE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['stack', 'trigger', 'holder', 'outcome', 'counts'],
  properties: {
    stack: stackName,
    commit: COMMIT_IN,
    trigger: { type: 'string', enum: [...TRIGGERS] },
    holder: { type: 'string', minLength: 1, maxLength: 500 },
    duration_ms: { type: 'integer', minimum: 0, maximum: MAX_DURATION_MS },
    outcome: { type: 'string', enum: [...OUTCOMES] },
    counts: COUNTS_SCHEMA,
    drift_count: { type: ['integer', 'null'], minimum: 0, maximum: 10_000_000 },
    error: { type: ['string', 'null'], maxLength: ERROR_MAX },
    plan_markdown: { type: ['string', 'null'], maxLength: PLAN_MARKDOWN_MAX },
    objects: OBJECTS_IN,
    policy: POLICY_IN,
  },
};
const SYNC_REQUEST_SCHEMA = { type: 'object', additionalProperties: false, properties: { requested_by: { type: 'string', minLength: 1, maxLength: 500 } } };

const COMMIT_OUT = {
  type: ['object', 'null'], additionalProperties: false, required: ['sha', 'subject', 'author'],
  properties: { sha: { type: 'string' }, subject: { type: ['string', 'null'] }, author: { type: ['string', 'null'] } },
};
const RUN_PROPS = {
  id: { type: 'string', description: `${SYNC_RUN_PREFIX}_ followed by 27 characters` },
  uri: { type: 'string', format: 'uri' },
  stack: { type: 'string' },
  commit: COMMIT_OUT,
  trigger: { type: 'string', enum: [...TRIGGERS] },
  holder: { type: 'string', description: 'Who ran it: the agent, or the CLI\'s user@host and pid' },
  started_at: { type: 'string', format: 'date-time' },
  finished_at: { type: 'string', format: 'date-time' },
  duration_ms: { type: 'integer' },
  outcome: { type: 'string', enum: [...OUTCOMES] },
  counts: COUNTS_SCHEMA,
  drift_count: { type: ['integer', 'null'] },
  error: { type: ['string', 'null'] },
  policy: POLICY_IN,
};
const RUN_REQUIRED = Object.keys(RUN_PROPS);
const RUN_SCHEMA = {
  type: 'object', additionalProperties: false, required: [...RUN_REQUIRED, 'plan_markdown', 'objects'],
  properties: { ...RUN_PROPS, plan_markdown: { type: ['string', 'null'], description: 'The plan as its Markdown comment (within its budget)' }, objects: OBJECTS_IN },
};
const RUN_ITEM_SCHEMA = { type: 'object', additionalProperties: false, required: RUN_REQUIRED, properties: RUN_PROPS, description: 'A run as listed: without its plan (GET the run for it)' };
const RUN_LIST_SCHEMA = {
  type: 'object', additionalProperties: false, required: ['sync_runs', 'uri', 'next_page_uri'],
  properties: { sync_runs: { type: 'array', items: RUN_ITEM_SCHEMA }, uri: { type: 'string', format: 'uri' }, next_page_uri: { type: ['string', 'null'], format: 'uri' } },
};
const STACK_SCHEMA = {
  type: 'object', additionalProperties: false,
  required: ['stack', 'uri', 'runs_uri', 'status', 'live_commit', 'live_since', 'last_run', 'drift_count', 'lock', 'sync_requested_at', 'sync_requested_by'],
  properties: {
    stack: { type: 'string' },
    uri: { type: 'string', format: 'uri' },
    runs_uri: { type: 'string', format: 'uri', description: 'The stack\'s runs, newest first' },
    status: { type: 'string', enum: ['synced', 'out_of_sync', 'failed', 'unknown'], description: 'From the last run: applied or no_changes → synced; drifted → out_of_sync; failed or blocked → failed; no run → unknown' },
    live_commit: COMMIT_OUT,
    live_since: { type: ['string', 'null'], format: 'date-time' },
    last_run: {
      type: ['object', 'null'], additionalProperties: false, required: ['id', 'uri', 'outcome', 'trigger', 'finished_at', 'commit_sha'],
      properties: {
        id: { type: 'string' }, uri: { type: 'string', format: 'uri' }, outcome: { type: 'string' }, trigger: { type: 'string' }, finished_at: { type: 'string', format: 'date-time' },
        commit_sha: { type: ['string', 'null'], description: 'The commit the last run synced, when known' },
      },
    },
    drift_count: { type: ['integer', 'null'], description: 'Changes the last run found and did not make (0 when synced; null when not known)' },
    lock: {
      type: ['object', 'null'], additionalProperties: false, required: ['holder', 'created_at', 'expires_at'],
      properties: { holder: { type: 'string' }, created_at: { type: 'string', format: 'date-time' }, expires_at: { type: 'string', format: 'date-time' } },
    },
    sync_requested_at: { type: ['string', 'null'], format: 'date-time', description: 'A sync asked for (`POST …/sync`) and not yet answered by a run that started after it' },
    sync_requested_by: { type: ['string', 'null'] },
  },
};
const STACK_LIST_SCHEMA = {
  type: 'object', additionalProperties: false, required: ['stacks', 'uri', 'next_page_uri'],
  properties: { stacks: { type: 'array', items: STACK_SCHEMA }, uri: { type: 'string', format: 'uri' }, next_page_uri: { type: ['string', 'null'], format: 'uri' } },
};

const RUN_PARAMS = [{ name: 'id', prefix: SYNC_RUN_PREFIX, what: 'sync run' }];
const STACK_PARAMS = [{ name: 'stack', prefix: '', what: 'the stack\'s name', pattern: STACK_NAME.source }];
const LIMIT_QUERY = { limit: { type: 'integer', minimum: 1, maximum: 100, default: 100, description: 'Page size' } };

function op(operationId: string, summary: string, status: number, response: object, more: { body?: object; params?: OperationDoc['params']; list?: true; query?: Record<string, unknown> } = {}) {
  const openapi: OperationDoc = { operationId, params: more.params ?? [], ...(more.list ? { listOf: SYNC_RUN_PREFIX } : {}), ...(more.query ? { query: more.query } : {}) };
  return {
    schema: { ...(more.body ? { body: more.body } : {}), response: { [status]: response }, summary, tags: ['sync record'] },
    config: { openapi },
  };
}

export const RUN_ID = new RegExp(idPattern(SYNC_RUN_PREFIX));
const iso = (d: Date | null) => (d ? rfc3339(d) : null);
const commitOf = (sha: string | null, subject: string | null, author: string | null) => (sha ? { sha, subject, author } : null);

export function runResponse(row: RunRow, base: string, withPlan: boolean) {
  return {
    id: row.id,
    uri: `${base}${SYNC_RUNS_PATH}/${row.id}`,
    stack: row.stack,
    commit: commitOf(row.commit_sha, row.commit_subject, row.commit_author),
    trigger: row.trigger,
    holder: row.holder,
    started_at: rfc3339(row.started_at),
    finished_at: rfc3339(row.finished_at),
    duration_ms: Math.max(0, new Date(row.finished_at).getTime() - new Date(row.started_at).getTime()),
    outcome: row.outcome,
    counts: row.counts,
    drift_count: row.drift_count,
    error: row.error,
    policy: row.policy ?? null,
    ...(withPlan ? { plan_markdown: row.plan_markdown ?? null, objects: row.objects ?? null } : {}),
  };
}

export function stackResponse(row: StackRow, base: string) {
  return {
    stack: row.stack,
    uri: `${base}${STACKS_PATH}/${row.stack}`,
    runs_uri: `${base}${SYNC_RUNS_PATH}?stack=${row.stack}`,
    status: row.status,
    live_commit: commitOf(row.live_sha, row.live_subject, row.live_author),
    live_since: iso(row.live_since),
    last_run: row.last_run_id && row.last_run_outcome
      ? { id: row.last_run_id, uri: `${base}${SYNC_RUNS_PATH}/${row.last_run_id}`, outcome: row.last_run_outcome, trigger: row.last_run_trigger!, finished_at: rfc3339(row.last_run_finished_at!), commit_sha: row.last_run_commit_sha }
      : null,
    drift_count: row.drift_count,
    lock: row.lock_holder ? { holder: row.lock_holder, created_at: rfc3339(row.lock_created_at!), expires_at: rfc3339(row.lock_expires_at!) } : null,
    sync_requested_at: iso(row.sync_requested_at),
    sync_requested_by: row.sync_requested_by,
  };
}

function text(field: string, v: string | null | undefined): string | null {
  if (v === null || v === undefined) return null;
  if (!isStorableText(v)) throw new ApiError('ERR_VALIDATION', `${field}: text may not contain U+0000 or an unpaired UTF-16 surrogate`);
  return v;
}

/** `limit` (1–100, default 100) and the other query parameters a list takes; anything else is refused. */
function listQuery(req: FastifyRequest, others: string[]): { limit: number; q: Record<string, unknown> } {
  const q = req.query as Record<string, unknown>;
  const known = ['limit', ...others];
  for (const k of Object.keys(q)) if (!known.includes(k)) throw new ApiError('ERR_INVALID_QUERY', `unknown query parameter '${k.slice(0, 60)}'; this list takes ${known.join(', ')}`);
  const raw = q.limit === undefined ? '100' : String(q.limit);
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 100) throw new ApiError('ERR_INVALID_QUERY', `limit: must be an integer from 1 to 100, got ${JSON.stringify(raw.slice(0, 60))}`);
  return { limit: Number(raw), q };
}

function stackQuery(v: unknown, field: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !STACK_NAME.test(v)) throw new ApiError('ERR_INVALID_QUERY', `${field}: must be a stack name (lower-case letters, digits, ".", "_" or "-"; 1-64 characters)`);
  return v;
}

/**
 * The record of syncs (an extension beside the resources of docs/api-spec.md; docs/api.md, "Sync record"):
 * runs, written by the sync agent and by the CLI's apply and destroy, and a summary per stack
 * with its live commit, status, last run, lock and a sync asked for. Every query is the caller's
 * account's.
 */
/** A write that checks a stack-limited key against its stack itself (`ownStack`). */
function stackChecked<T extends { config: object }>(options: T): T {
  return { ...options, config: { ...options.config, stacks: 'checked' as const } };
}

export function registerSyncRecord(app: FastifyInstance, db: Db, callerOf: (req: FastifyRequest) => Caller, idempotency: IdempotencyOptions = {}, opts: SyncRecordOptions = {}): void {
  const keep = opts.runsPerStack ?? DEFAULT_RUNS_PER_STACK;
  const runItem = `${SYNC_RUNS_PATH}/:id`;
  const stackItem = `${STACKS_PATH}/:stack`;
  const syncPath = `${STACKS_PATH}/:stack/sync`;

  app.post(SYNC_RUNS_PATH, stackChecked(op('createSyncRun', 'Record a run of a stack (an apply, a drift check, a refused or failed sync)', 201, RUN_SCHEMA, { body: CREATE_SCHEMA })), async (req, reply) => {
    const caller = callerOf(req);
    ownStack(caller, (req.body as { stack: string }).stack, 'the run');
    const b = req.body as {
      stack: string; commit?: { sha: string; subject?: string; author?: string } | null; trigger: NewRun['trigger']; holder: string; duration_ms?: number;
      outcome: NewRun['outcome']; counts: NewRun['counts']; drift_count?: number | null; error?: string | null; plan_markdown?: string | null; objects?: RunObject[] | null;
      policy?: RunPolicy | null;
    };
    const commit = b.commit ? { sha: b.commit.sha, subject: text('commit.subject', b.commit.subject) ?? undefined, author: text('commit.author', b.commit.author) ?? undefined } : null;
    const run: NewRun = {
      id: newId(SYNC_RUN_PREFIX), accountId: caller.accountId, stack: b.stack, commit, trigger: b.trigger, holder: text('holder', b.holder)!,
      durationMs: b.duration_ms ?? 0, outcome: b.outcome, counts: b.counts, driftCount: b.drift_count ?? null,
      error: text('error', b.error), planMarkdown: text('plan_markdown', b.plan_markdown),
      objects: b.objects?.map((o) => ({ identity: text('objects.identity', o.identity)!, action: text('objects.action', o.action)!, fields: o.fields.map((f) => text('objects.fields', f)!), ...(o.drift !== undefined ? { drift: o.drift } : {}) })) ?? null,
      policy: b.policy ? { denied: b.policy.denied, warned: b.policy.warned, overrides: b.policy.overrides.map((o) => ({ policy: text('policy.overrides.policy', o.policy)!, reason: text('policy.overrides.reason', o.reason)! })) } : null,
    };
    const result = await runIdempotent(db, req, caller.accountId, async (d) => {
      const body = runResponse(await recordRun(d, run, keep), caller.baseUrl, true);
      body.plan_markdown = run.planMarkdown;
      body.objects = run.objects;
      return { status: 201, body, location: body.uri, objectId: body.id };
    }, idempotency, async (d, id) => {
      // A run with a large plan is kept by reference: a run is never changed, so this is its first answer (or gone, past the retention).
      const row = await getRun(d, caller.accountId, id);
      if (!row) throw new ApiError('ERR_NOT_FOUND', `sync run ${id} not found`);
      return { status: 201, body: runResponse(row, caller.baseUrl, true) };
    });
    reply.code(result.status);
    if (result.location) reply.header('Location', result.location);
    for (const [k, v] of Object.entries(result.headers ?? {})) reply.header(k, v);
    return result.body;
  });

  app.get(SYNC_RUNS_PATH, op('listSyncRuns', 'List runs, newest first (of one stack with ?stack=)', 200, RUN_LIST_SCHEMA, { list: true, query: { stack: { ...stackName, description: 'Only this stack\'s runs' } } }), async (req) => {
    const caller = callerOf(req);
    const { limit, q } = listQuery(req, ['before_id', 'stack']);
    const before = q.before_id;
    if (before !== undefined && (typeof before !== 'string' || !RUN_ID.test(before))) throw new ApiError('ERR_INVALID_QUERY', `before_id: must be an id of this list (${SYNC_RUN_PREFIX}_…)`);
    const stack = stackQuery(q.stack, 'stack');
    const page = await listRuns(db, caller.accountId, { stack, limit, beforeId: before as string | undefined });
    const base = caller.baseUrl + SYNC_RUNS_PATH;
    const last = page.rows.at(-1)?.id;
    const filter = stack === undefined ? '' : `stack=${stack}&`;
    return {
      sync_runs: page.rows.map((r) => runResponse(r, caller.baseUrl, false)),
      uri: stack === undefined ? base : `${base}?stack=${stack}`,
      next_page_uri: page.more && last ? `${base}?${filter}before_id=${last}&limit=${limit}` : null,
    };
  });

  app.get(runItem, op('getSyncRun', 'Get a run, with its plan', 200, RUN_SCHEMA, { params: RUN_PARAMS }), async (req) => {
    const caller = callerOf(req);
    const { id } = req.params as { id: string };
    const row = RUN_ID.test(id) ? await getRun(db, caller.accountId, id) : null;
    if (!row) throw new ApiError('ERR_NOT_FOUND', `sync run ${id.slice(0, 60)} not found`);
    return runResponse(row, caller.baseUrl, true);
  });

  app.get(STACKS_PATH, op('listStacks', 'List the stacks\' summaries, by name', 200, STACK_LIST_SCHEMA, {
    query: { ...LIMIT_QUERY, after: { ...stackName, description: 'The last stack of the previous page (next_page_uri carries it)' } },
  }), async (req) => {
    const caller = callerOf(req);
    const { limit, q } = listQuery(req, ['after']);
    const after = stackQuery(q.after, 'after');
    const page = await listStacks(db, caller.accountId, { limit, after });
    const base = caller.baseUrl + STACKS_PATH;
    const last = page.rows.at(-1)?.stack;
    return {
      stacks: page.rows.map((r) => stackResponse(r, caller.baseUrl)),
      uri: base,
      next_page_uri: page.more && last ? `${base}?after=${last}&limit=${limit}` : null,
    };
  });

  app.get(stackItem, op('getStack', 'Get a stack\'s summary: live commit, status, last run, lock, a sync asked for', 200, STACK_SCHEMA, { params: STACK_PARAMS }), async (req) => {
    const caller = callerOf(req);
    const { stack } = req.params as { stack: string };
    const row = STACK_NAME.test(stack) ? (await listStacks(db, caller.accountId, { limit: 1, stack })).rows[0] : undefined;
    if (!row) throw new ApiError('ERR_NOT_FOUND', `stack ${JSON.stringify(stack.slice(0, 64))} has no run, lock or sync request`);
    return stackResponse(row, caller.baseUrl);
  });

  app.post(syncPath, {
    ...stackChecked(op('requestStackSync', 'Ask the stack\'s agents for a sync now (answered by the first run that starts after it)', 202, STACK_SCHEMA, { params: STACK_PARAMS, body: SYNC_REQUEST_SCHEMA })),
    preValidation: async (req) => { req.body ??= {}; },
  }, async (req, reply) => {
    const caller = callerOf(req);
    const { stack } = req.params as { stack: string };
    ownStack(caller, stack, 'the sync request');
    if (!STACK_NAME.test(stack)) throw new ApiError('ERR_VALIDATION', `stack: ${JSON.stringify(stack.slice(0, 64))} is not a stack name (lower-case letters, digits, ".", "_" or "-"; 1-64 characters)`);
    const by = text('requested_by', (req.body as { requested_by?: string }).requested_by);
    await requestSync(db, caller.accountId, stack, by);
    const row = (await listStacks(db, caller.accountId, { limit: 1, stack })).rows[0];
    reply.code(202);
    return stackResponse(row, caller.baseUrl);
  });

  const methods = (...m: HTTPMethods[]) => new Set<HTTPMethods>(m);
  registerMethodNotAllowed(app, new Map([
    [SYNC_RUNS_PATH, methods('GET', 'POST')], [runItem, methods('GET')], [STACKS_PATH, methods('GET')], [stackItem, methods('GET')], [syncPath, methods('POST')],
  ]));
}
