import type { FastifyInstance, FastifyRequest, HTTPMethods } from 'fastify';
import type { Db } from '../../store/db.js';
import { getStackLock, listStackLocks, releaseStackLock, renewStackLock, sweepStackLocks, takeStackLock, type StackLockRow } from '../../store/stack-locks.js';
import { idPattern, newId } from '../../util/ids.js';
import { isPrintableText, isStorableText } from '../../util/text.js';
import { rfc3339 } from '../../util/time.js';
import { ApiError } from '../../contract/errors.js';
import { stackRefusalMessage } from '../../contract/stack-name.js';
import { runIdempotent, type IdempotencyOptions } from '../writes/idempotency.js';
import { registerMethodNotAllowed, type OperationDoc } from './kind-routes.js';
import type { Caller } from '../writes/resources.js';

export const STACK_LOCKS_PATH = '/stack_locks';
export const STACK_LOCK_PREFIX = 'stklk';
export const DEFAULT_LOCK_TTL_SECONDS = 60;
export const MAX_LOCK_TTL_SECONDS = 3600;

const ttl = { type: 'integer', minimum: 1, maximum: MAX_LOCK_TTL_SECONDS };
const CREATE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['stack', 'holder'],
  properties: {
    stack: { type: 'string', minLength: 1, maxLength: 255 },
    holder: { type: 'string', minLength: 1, maxLength: 500 },
    ttl_seconds: ttl,
  },
};
const RENEW_SCHEMA = { type: 'object', additionalProperties: false, properties: { ttl_seconds: ttl } };

const LOCK_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', description: `${STACK_LOCK_PREFIX}_ followed by 27 characters` },
    uri: { type: 'string', format: 'uri' },
    stack: { type: 'string', description: 'The stack the lock is for (one live lock per stack and account).' },
    holder: { type: 'string', description: 'Who holds it: user@host, pid, command, and the CI run when there is one.' },
    created_at: { type: 'string', format: 'date-time' },
    expires_at: { type: 'string', format: 'date-time', description: 'When the lock stops counting unless renewed.' },
  },
  required: ['id', 'uri', 'stack', 'holder', 'created_at', 'expires_at'],
  additionalProperties: false,
};
const LIST_SCHEMA = {
  type: 'object',
  properties: {
    stack_locks: { type: 'array', items: LOCK_SCHEMA },
    uri: { type: 'string', format: 'uri' },
    next_page_uri: { type: ['string', 'null'], format: 'uri' },
  },
  required: ['stack_locks', 'uri', 'next_page_uri'],
  additionalProperties: false,
};
const NO_BODY = { type: 'null', description: 'No body' };
const ITEM_PARAMS = [{ name: 'id', prefix: STACK_LOCK_PREFIX, what: 'stack lock' }];

/** The route options of one stack-lock operation: its schemas, and what the OpenAPI document adds (`OperationDoc`). */
function op(operationId: string, summary: string, status: number, response: object, more: { body?: object; params?: typeof ITEM_PARAMS; list?: true } = {}) {
  const openapi: OperationDoc = { operationId, params: more.params ?? [], ...(more.list ? { listOf: STACK_LOCK_PREFIX } : {}) };
  return {
    schema: { ...(more.body ? { body: more.body } : {}), response: { [status]: response }, summary, tags: ['stack lock'] },
    // Each write checks a stack-limited key against the lock's stack (`ownStack`).
    config: { openapi, stacks: 'checked' as const },
  };
}

/** A stack-limited key takes, renews and releases only its stacks' locks: 403 otherwise. */
export function ownStack(caller: Caller, stack: string, what: string): void {
  if (!caller.stacks || caller.stacks.includes(stack)) return;
  throw new ApiError('ERR_FORBIDDEN_SCOPE', stackRefusalMessage(caller.stacks, `${what} is stack ${JSON.stringify(stack.slice(0, 64))}'s`), { stacks: caller.stacks.join(','), needs: `stack ${stack.slice(0, 64)}` });
}

function lockResponse(row: StackLockRow, base: string) {
  return {
    id: row.id,
    uri: `${base}${STACK_LOCKS_PATH}/${row.id}`,
    stack: row.stack,
    holder: row.holder,
    created_at: rfc3339(row.created_at),
    expires_at: rfc3339(row.expires_at),
  };
}

const ID = new RegExp(idPattern(STACK_LOCK_PREFIX));

function notFound(id: string): ApiError {
  return new ApiError('ERR_NOT_FOUND', `stack lock ${id.slice(0, 60)} not found (released, or expired)`);
}

function text(field: string, v: string): string {
  if (!isStorableText(v)) throw new ApiError('ERR_VALIDATION', `${field}: text may not contain U+0000 or an unpaired UTF-16 surrogate`);
  // Shown to people (the CLI's messages, CI logs): no control (ESC, CR, LF…) or bidi character.
  if (!isPrintableText(v)) throw new ApiError('ERR_VALIDATION', `${field}: text may hold printable characters only (no control characters such as ESC, CR or LF, and no bidirectional controls)`);
  return v;
}

/**
 * Stack locks (an extension beside the resources of docs/api-spec.md; docs/api.md): one live lock per
 * (account, stack), held by whoever applies the stack, renewed while it works and released at the
 * end. An expired lock no longer counts; the database decides between replicas.
 */
export function registerStackLocks(app: FastifyInstance, db: Db, callerOf: (req: FastifyRequest) => Caller, idempotency: IdempotencyOptions = {}): void {
  const item = `${STACK_LOCKS_PATH}/:id`;
  app.post(STACK_LOCKS_PATH, op('createStackLock', 'Take the lock of a stack (409 ERR_STACK_LOCKED while another holds it)', 201, LOCK_SCHEMA, { body: CREATE_SCHEMA }), async (req, reply) => {
    const caller = callerOf(req);
    const input = req.body as { stack: string; holder: string; ttl_seconds?: number };
    ownStack(caller, input.stack, 'the lock');
    const result = await runIdempotent(db, req, caller.accountId, async (d) => {
      const out = await takeStackLock(d, {
        id: newId(STACK_LOCK_PREFIX), accountId: caller.accountId, stack: text('stack', input.stack), holder: text('holder', input.holder),
        ttlSeconds: input.ttl_seconds ?? DEFAULT_LOCK_TTL_SECONDS,
      });
      if ('held' in out) {
        const h = out.held;
        throw new ApiError('ERR_STACK_LOCKED', `stack ${JSON.stringify(h.stack)} is locked by ${h.holder} since ${rfc3339(h.created_at)} (expires ${rfc3339(h.expires_at)} unless renewed)`, {
          stack: h.stack, holder: h.holder, created_at: rfc3339(h.created_at), expires_at: rfc3339(h.expires_at),
        });
      }
      const body = lockResponse(out.taken, caller.baseUrl);
      return { status: 201, body, location: body.uri };
    }, idempotency);
    // Locks left to expire (killed applies, clients that never release) are deleted a few at each take.
    await sweepStackLocks(db).catch((err: unknown) => req.log.warn({ err }, 'expired stack locks not swept'));
    reply.code(result.status);
    if (result.location) reply.header('Location', result.location);
    for (const [k, v] of Object.entries(result.headers ?? {})) reply.header(k, v);
    return result.body;
  });
  app.get(STACK_LOCKS_PATH, op('listStackLocks', 'List the live stack locks', 200, LIST_SCHEMA, { list: true }), async (req) => {
    const caller = callerOf(req);
    const query = req.query as Record<string, unknown>;
    for (const k of Object.keys(query)) if (k !== 'limit' && k !== 'before_id') throw new ApiError('ERR_INVALID_QUERY', `unknown query parameter '${k}'; lists take limit, before_id`);
    const raw = query.limit === undefined ? '100' : String(query.limit);
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 100) throw new ApiError('ERR_INVALID_QUERY', `limit: must be an integer from 1 to 100, got ${JSON.stringify(raw.slice(0, 60))}`);
    const before = query.before_id;
    if (before !== undefined && (typeof before !== 'string' || !ID.test(before))) throw new ApiError('ERR_INVALID_QUERY', `before_id: must be an id of this list (${STACK_LOCK_PREFIX}_…)`);
    const limit = Number(raw);
    const page = await listStackLocks(db, caller.accountId, { limit, beforeId: before as string | undefined });
    const base = caller.baseUrl + STACK_LOCKS_PATH;
    const last = page.rows.at(-1)?.id;
    return {
      stack_locks: page.rows.map((r) => lockResponse(r, caller.baseUrl)),
      uri: base,
      next_page_uri: page.more && last ? `${base}?before_id=${last}&limit=${limit}` : null,
    };
  });
  app.get(item, op('getStackLock', 'Get a stack lock', 200, LOCK_SCHEMA, { params: ITEM_PARAMS }), async (req) => {
    const caller = callerOf(req);
    const { id } = req.params as { id: string };
    const row = ID.test(id) ? await getStackLock(db, caller.accountId, id) : null;
    if (!row) throw notFound(id);
    return lockResponse(row, caller.baseUrl);
  });
  app.patch(item, {
    ...op('renewStackLock', 'Renew a stack lock (a new time to live from now; no body: the default)', 200, LOCK_SCHEMA, { body: RENEW_SCHEMA, params: ITEM_PARAMS }),
    // Every field is optional: no body at all renews with the default time to live, as `{}` does.
    preValidation: async (req) => { req.body ??= {}; },
  }, async (req) => {
    const caller = callerOf(req);
    const { id } = req.params as { id: string };
    const input = (req.body ?? {}) as { ttl_seconds?: number };
    if (caller.stacks && ID.test(id)) {
      const lock = await getStackLock(db, caller.accountId, id);
      if (lock) ownStack(caller, lock.stack, `lock ${id}`);
    }
    const row = ID.test(id) ? await renewStackLock(db, caller.accountId, id, input.ttl_seconds ?? DEFAULT_LOCK_TTL_SECONDS) : null;
    if (!row) throw notFound(id);
    return lockResponse(row, caller.baseUrl);
  });
  app.delete(item, op('releaseStackLock', 'Release a stack lock', 204, NO_BODY, { params: ITEM_PARAMS }), async (req, reply) => {
    const caller = callerOf(req);
    const { id } = req.params as { id: string };
    if (caller.stacks && ID.test(id)) {
      const lock = await getStackLock(db, caller.accountId, id);
      if (lock) ownStack(caller, lock.stack, `lock ${id}`);
    }
    if (!ID.test(id) || !(await releaseStackLock(db, caller.accountId, id))) throw notFound(id);
    return reply.code(204).send();
  });
  const methods = (...m: HTTPMethods[]) => new Set<HTTPMethods>(m);
  registerMethodNotAllowed(app, new Map([[STACK_LOCKS_PATH, methods('GET', 'POST')], [item, methods('GET', 'PATCH', 'DELETE')]]));
}
