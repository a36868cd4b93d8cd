import type { FastifyInstance, FastifyRequest, HTTPMethods } from 'fastify';
import { KINDS } from '../../kinds/registry.js';
import { listResponseSchema, moduleResponseSchema, responseSchema } from '../../kinds/response-schemas.js';
import { moduleRequestSchema, requestSchema } from '../../kinds/schemas.js';
import type { JSONSchema } from '../../kinds/types.js';
import type { AccountFlag, Body, KindDef } from '../../kinds/types.js';
import { ApiError } from '../../contract/errors.js';
import type { ErrorObject } from 'ajv';
import { schemaError } from '../../contract/validation.js';
import type { Caller, Resources } from '../writes/resources.js';
import { collectionPath } from '../../contract/paths.js';
import { etagOfBody, RenderedJson } from '../responses/serialize.js';
import { runIdempotent, type IdempotencyOptions, type KeepAlong, type RouteResult } from '../writes/idempotency.js';
import type { Db } from '../../store/db.js';
import { idPattern } from '../../util/ids.js';
import { isStorableText } from '../../util/text.js';

type Params = Record<string, string>;

/** `/edges/https/:edge_id/routes` → its path parameters, in order. */
function pathParams(path: string): string[] {
  return [...path.matchAll(/:([a-z_]+)/g)].map((m) => m[1]);
}

/** The tolerated body extras (`id`, `edge_id`) must equal the path's ids; then they are dropped. */
function stripPathIds(body: unknown, params: Params, names: string[]): Body {
  const input = { ...(body as Body) };
  for (const name of names) {
    if (!(name in input)) continue;
    if (input[name] !== params[name]) {
      throw new ApiError('ERR_ID_MISMATCH', `${name}: ${JSON.stringify(input[name])} differs from the ${name} in the path (${params[name]})`);
    }
    delete input[name];
  }
  return input;
}

const LIST_QUERY = new Set(['limit', 'before_id', 'beforeId']);

const idRegexes = new Map<KindDef, RegExp>();
function idRegex(kind: KindDef): RegExp {
  let r = idRegexes.get(kind);
  if (!r) idRegexes.set(kind, (r = new RegExp(idPattern(kind.idPrefix))));
  return r;
}

function listQuery(query: Record<string, unknown>, kind: KindDef): { limit: number; beforeId?: string } {
  for (const key of Object.keys(query)) {
    if (!LIST_QUERY.has(key)) throw new ApiError('ERR_INVALID_QUERY', `unknown query parameter '${key}'; lists take limit, before_id`);
  }
  let limit = 100;
  if (query.limit !== undefined) {
    const raw = String(query.limit);
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 100) {
      throw new ApiError('ERR_INVALID_QUERY', `limit: must be an integer from 1 to 100, got ${JSON.stringify(raw)}`);
    }
    limit = Number(raw);
  }
  const before = query.before_id ?? query.beforeId;
  if (before !== undefined && (typeof before !== 'string' || before === '' || !isStorableText(before))) {
    throw new ApiError('ERR_INVALID_QUERY', 'before_id: must be one id');
  }
  // An id of this collection's kind (the last id of a page, from next_page_uri): anything else would
  // page from a place no object has, silently (a typo gave the whole list).
  if (before !== undefined && !idRegex(kind).test(before as string)) {
    throw new ApiError('ERR_INVALID_QUERY', `before_id: must be an id of this list (${kind.idPrefix}_…), got ${JSON.stringify((before as string).slice(0, 60))}`);
  }
  return { limit, beforeId: before as string | undefined };
}

/**
 * What the OpenAPI document says of an operation beyond its route schema (`plugins/openapi.ts`):
 * its path parameters and list query are checked by the handler, not by a schema fastify would
 * compile, so they are described here.
 */
export interface OperationDoc {
  operationId: string;
  /** Path parameters and the id prefix each names (or, for a parameter that is not an id, its `pattern`). */
  params: { name: string; prefix: string; what: string; pattern?: string }[];
  /** The list query (limit, before_id). */
  listOf?: string;
  /** Another query than the list's (`properties` of the query object). */
  query?: Record<string, unknown>;
  /** The account flag the operation needs (403 without it). */
  requires?: AccountFlag;
}

const NO_BODY: JSONSchema = { type: 'null', description: 'No body' };

const camel = (s: string) => s.replace(/(?:^|_)([a-z])/g, (_m, c: string) => c.toUpperCase());
const a = (title: string) => (/^(?:[aeiou]|HTTP)/i.test(title) ? `an ${title}` : `a ${title}`);
const plural = (s: string) => (s.endsWith('y') ? s.slice(0, -1) + 'ies' : s + 's');

/** The `If-Match` of a conditional write, if any (see `matchesIfMatch`). */
function ifMatchOf(req: FastifyRequest): string | undefined {
  const v = req.headers['if-match'];
  return v === undefined ? undefined : Array.isArray(v) ? v.join(', ') : v;
}

/** `Prefer: etags` asks a list for the ETag of each object (and of each child it embeds) by id. */
function wantsEtags(req: FastifyRequest): boolean {
  const v = req.headers.prefer;
  return v !== undefined && /(?:^|[,;\s])etags(?:$|[,;\s])/i.test(Array.isArray(v) ? v.join(',') : v);
}

function listEtags(kind: KindDef, items: Body[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const etag = etagOfBody(item);
    if (etag) out[item.id as string] = etag;
    for (const field of Object.keys(kind.embeds ?? {})) {
      for (const child of (item[field] as Body[] | undefined) ?? []) {
        const e = etagOfBody(child);
        if (e) out[child.id as string] = e;
      }
    }
  }
  return out;
}

/** The `Link` header of a list page (OpenAPI: the response's headers). */
const NEXT_LINK: JSONSchema = { type: 'string', description: 'The next page, as next_page_uri gives it: `<url>; rel="next"`. Absent on the last page.' };

/** A list's response schema (and its `Link` header) with the `etags` map a `Prefer: etags` request gets. */
function withEtags(schema: JSONSchema): JSONSchema {
  const properties = (schema.properties ?? {}) as Record<string, JSONSchema>;
  return { ...schema, headers: { Link: NEXT_LINK }, properties: { ...properties, etags: { type: 'object', additionalProperties: { type: 'string' }, description: 'With `Prefer: etags`: the ETag of each object of the page (and of each child it embeds), by id.' } } };
}

/**
 * Registers every operation of every kind (and of its modules) from the kind descriptions, plus a
 * 405 with `Allow` for the other methods on each known path. Each success response has its schema
 * (`kinds/response-schemas.ts`): fastify serialises it with that schema, so a field the schema does
 * not name is never sent. Creates and module PUTs take an `Idempotency-Key` (`idempotency.ts`);
 * writes to an object take `If-Match`.
 */
export function registerKindRoutes(app: FastifyInstance, resources: Resources, callerOf: (req: FastifyRequest) => Caller, db: Db, idempotency: IdempotencyOptions = {}) {
  const allowed = new Map<string, Set<HTTPMethods>>();
  let requires: AccountFlag | undefined;
  let stackChecked = false;
  let tag = '';
  let params: OperationDoc['params'] = [];
  const route = (method: HTTPMethods, url: string, opts: { body?: Record<string, unknown>; preValidation?: (req: FastifyRequest) => void; field?: string; operationId: string; summary: string; status: number; response?: JSONSchema; listOf?: string; idempotent?: boolean; keepsAlong?: boolean; reread?: (req: FastifyRequest, params: Params, resources: Resources, id: string) => Promise<unknown> }, handler: (req: FastifyRequest, params: Params, resources: Resources, keep?: KeepAlong) => Promise<RouteResult>) => {
    allowed.set(url, (allowed.get(url) ?? new Set()).add(method));
    const flag = requires;
    const openapi: OperationDoc = { operationId: opts.operationId, params: params.filter((p) => url.includes(`:${p.name}`)), listOf: opts.listOf, requires: flag };
    app.route({
      method,
      url,
      schema: {
        ...(opts.body ? { body: opts.body } : {}),
        response: { [opts.status]: opts.response ?? NO_BODY },
        summary: opts.summary,
        tags: [tag],
      },
      // The kinds the reconciler manages carry ownership markers: their writes check a stack-limited key (`Resources`).
      config: stackChecked ? { openapi, stacks: 'checked' as const } : { openapi },
      // A module's body is one field of the object: its problems are named from the object
      // (`oauth.provider.google.teams[0]`), as the same body inside a POST or PATCH names them.
      ...(opts.field ? { schemaErrorFormatter: fieldErrors(opts.field) } : {}),
      // Before body validation: an account without the flag learns nothing about the body's rules.
      preValidation: flag || opts.preValidation
        ? async (req) => {
            if (flag) requireFlag(req, flag);
            opts.preValidation?.(req);
          }
        : undefined,
      handler: async (req, reply) => {
        const p = req.params as Params;
        const result = opts.idempotent
          ? await runIdempotent(db, req, callerOf(req).accountId, (d, keep) => handler(req, p, resources.withDb(d), keep), idempotency,
            opts.reread && (async (d, id) => ({ status: 200, body: await opts.reread!(req, p, resources.withDb(d), id) })), { keepsAlong: opts.keepsAlong })
          : await handler(req, p, resources);
        reply.code(result.status);
        if (result.location) reply.header('Location', result.location);
        const etag = etagOfBody(result.body);
        if (etag) reply.header('ETag', etag);
        for (const [k, v] of Object.entries(result.headers ?? {})) reply.header(k, v);
        // A stored view: fastify sends a string of a JSON type as it is, past the serialiser.
        if (result.body instanceof RenderedJson) return reply.type('application/json; charset=utf-8').send(result.body.json);
        return result.status === 204 ? reply.send() : result.body;
      },
    });
  };

  for (const kind of KINDS) registerKind(kind);

  function registerKind(kind: KindDef) {
    requires = kind.requires;
    stackChecked = kind.manifestKind !== undefined;
    tag = kind.title;
    const collection = kind.path;
    const item = `${collection}/:id`;
    const parentParams = pathParams(collection);
    const parentOf = (p: Params) => (kind.parent ? p[kind.parent.param] : undefined);
    const ops = new Set(kind.operations);
    const parentKind = kind.parent ? KINDS.find((k) => k.name === kind.parent!.kind) : undefined;
    params = [
      ...(kind.parent && parentKind ? [{ name: kind.parent.param, prefix: parentKind.idPrefix, what: parentKind.title }] : []),
      { name: 'id', prefix: kind.idPrefix, what: kind.title },
    ];
    const name = camel(kind.name);
    const object = responseSchema(kind);
    // A keyed write's response too large to keep is read again on replay as a GET reads it (`runIdempotent`).
    const rereadObject = (req: FastifyRequest, p: Params, resources: Resources, id: string) => resources.getRendered(kind, callerOf(req), id, parentOf(p));

    if (ops.has('create')) {
      route('POST', collection, { body: requestSchema(kind, 'create', parentParams), operationId: `create${name}`, summary: `Create ${a(kind.title)}`, status: 201, response: object, idempotent: true, keepsAlong: true, reread: rereadObject }, async (req, p, resources, keep) => {
        // The new object's address, as HTTP has it for 201 (the same as its `uri`).
        const created = (body: Body): RouteResult => ({ status: 201, body, location: (body as { uri?: string }).uri, objectId: body.id as string });
        // A keyed create keeps its response in its insert (`KeepAlong`).
        const body = await resources.create(kind, callerOf(req), stripPathIds(req.body, p, parentParams), parentOf(p), keep && ((b) => keep(created(b))));
        return created(body);
      });
    }
    if (ops.has('list')) {
      route('GET', collection, { operationId: `list${plural(name)}`, summary: `List ${plural(kind.title)}, newest first`, status: 200, response: withEtags(listResponseSchema(kind)), listOf: kind.idPrefix }, async (req, p) => {
        const caller = callerOf(req);
        const q = listQuery(req.query as Record<string, unknown>, kind);
        const page = await resources.list(kind, caller, q);
        const base = caller.baseUrl + collectionPath(kind, parentOf(p) ?? null);
        const etags = wantsEtags(req);
        const next = page.more && page.lastId ? `${base}?before_id=${page.lastId}&limit=${q.limit}` : null;
        // The next link is also a `Link` header (RFC 8288): a reader follows it without parsing the page (`client/page-loop.ts`).
        const headers = { ...(etags ? { 'preference-applied': 'etags' } : {}), ...(next ? { link: `<${next}>; rel="next"` } : {}) };
        return {
          status: 200,
          body: {
            [kind.listKey!]: page.items,
            uri: base,
            next_page_uri: next,
            ...(etags ? { etags: listEtags(kind, page.items) } : {}),
          },
          headers,
        };
      });
    }
    if (ops.has('get')) {
      route('GET', item, { operationId: `get${name}`, summary: `Get ${a(kind.title)}`, status: 200, response: object }, async (req, p) => ({
        status: 200,
        body: await resources.getRendered(kind, callerOf(req), p.id, parentOf(p)),
      }));
    }
    if (ops.has('update')) {
      const tolerated = [...parentParams, 'id'];
      route('PATCH', item, { body: requestSchema(kind, 'update', tolerated), operationId: `update${name}`, summary: `Update ${a(kind.title)} (fields left out are kept)`, status: 200, response: object, idempotent: true, reread: rereadObject }, async (req, p, resources) => ({
        status: 200,
        body: await resources.update(kind, callerOf(req), p.id, stripPathIds(req.body, p, tolerated), parentOf(p), ifMatchOf(req)),
        objectId: p.id,
      }));
    }
    if (ops.has('delete')) {
      route('DELETE', item, { operationId: `delete${name}`, summary: `Delete ${a(kind.title)}`, status: 204 }, async (req, p) => {
        await resources.remove(kind, callerOf(req), p.id, parentOf(p), ifMatchOf(req));
        return { status: 204 };
      });
    }
    for (const mod of kind.modules ?? []) {
      const url = `${item}/${mod.name}`;
      const tolerated = [...parentParams, 'id'];
      // Existing clients send `{"module": {…}}` (with the path ids beside it): unwrap it.
      const unwrap = (req: FastifyRequest) => {
        const b = req.body as Body | undefined;
        // Only an object is unwrapped: `{"module": []}` spread into `{}` set the module to its defaults.
        if (b && typeof b === 'object' && !Array.isArray(b) && b.module && typeof b.module === 'object' && !Array.isArray(b.module) && Object.keys(b).every((k) => k === 'module' || tolerated.includes(k))) {
          const { module, ...ids } = b;
          req.body = { ...(module as Body), ...ids };
        }
      };
      const modName = `${name}${camel(mod.name)}`;
      const modResponse = moduleResponseSchema(mod);
      route('PUT', url, { body: moduleRequestSchema(mod, tolerated), preValidation: unwrap, field: mod.name, operationId: `replace${modName}`, summary: `Set the ${mod.name} module of ${a(kind.title)} (replaces it whole)`, status: 200, response: modResponse, idempotent: true, reread: (req, p, resources, id) => resources.getModule(kind, mod, callerOf(req), id, parentOf(p)) }, async (req, p, resources) => ({
        status: 200,
        body: await resources.putModule(kind, mod, callerOf(req), p.id, stripPathIds(req.body, p, tolerated), parentOf(p), ifMatchOf(req)),
        objectId: p.id,
      }));
      route('GET', url, { operationId: `get${modName}`, summary: `Get the ${mod.name} module of ${a(kind.title)}`, status: 200, response: modResponse }, async (req, p) => ({ status: 200, body: await resources.getModule(kind, mod, callerOf(req), p.id, parentOf(p)) }));
      route('DELETE', url, { operationId: `delete${modName}`, summary: `Remove the ${mod.name} module of ${a(kind.title)}`, status: 204 }, async (req, p) => {
        const etag = await resources.deleteModule(kind, mod, callerOf(req), p.id, parentOf(p), ifMatchOf(req));
        return { status: 204, headers: { etag } };
      });
    }
  }

  registerMethodNotAllowed(app, allowed);
}

const FLAG_WORDING: Record<AccountFlag, string> = {
  abuseReports: 'abuse reports; access is granted by the operator\'s abuse team',
};

function requireFlag(req: FastifyRequest, flag: AccountFlag): void {
  if (!req.principal?.[flag]) throw new ApiError('ERR_FORBIDDEN', `this account is not authorized for ${FLAG_WORDING[flag]}`);
}

const METHODS: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export function registerMethodNotAllowed(app: FastifyInstance, allowed: Map<string, Set<HTTPMethods>>) {
  for (const [url, methods] of allowed) {
    const others = METHODS.filter((m) => !methods.has(m));
    const allow = [...methods, ...(methods.has('GET') ? ['HEAD'] : [])].join(', ');
    app.route({
      method: others,
      url,
      // Not operations: left out of the OpenAPI document. They only refuse: any key gets its 405.
      schema: { hide: true },
      config: { scope: 'read' },
      handler: async () => {
        throw new ApiError('ERR_METHOD_NOT_ALLOWED', `this path takes ${allow}`, {}, { allow });
      },
    });
  }
}

/** Validation errors of a body that is one field of the object (a module), named from the object. */
function fieldErrors(field: string) {
  return (errors: unknown[]): Error => schemaError(errors[0] as ErrorObject, field);
}
