import { findKind, kindByName } from '../../kinds/registry.js';
import { clearable } from '../../kinds/fields.js';
import { forEachRefValue } from '../../kinds/refs.js';
import type { Body, HookContext, KindDef, KindRuntimeConfig, ModuleDef, RefDef, UniqueDef } from '../../kinds/types.js';
import type { Along, Db, Queryable } from '../../store/db.js';
import { isPgError } from '../../store/db.js';
import { foreignOverlap } from '../../store/hostport-overlaps.js';
import {
  bumpVersion, childTotals, lockParentForChild, deleteObject, existingIds, getObject, getViews, getWithChildren, insertObject, insertObjectAlong, listChildren, listObjects, lockObject, reaches, referrers,
  replaceRefs, replaceUniques, UniqueViolation, updateBody, type ObjectRow, type RefRow,
} from '../../store/objects.js';
import { isDeepStrictEqual } from 'node:util';
import { moduleCheckForm, throwingChecks } from '../../kinds/check.js';
import { getPath, hasPath, holderOf } from '../../kinds/paths.js';
import { newId } from '../../util/ids.js';
import { ApiError } from '../../contract/errors.js';
import { markerStack, stackRefusalMessage } from '../../contract/stack-name.js';
import { runEffects } from './effects.js';
import { sealBody, type Sealer } from './sealing.js';
import type { ServiceSecrets } from './secrets.js';
import { LIST_PAGE_BYTES } from '../../contract/limits.js';
import { ETAG, etagOf, keepsView, matchesIfMatch, renderView, RenderedJson, toResponse, viewFor, withChildren } from '../responses/serialize.js';

const TX_ATTEMPTS = 4;

/**
 * Who is asking and how to address them: every operation is scoped to one account. `stacks`: a
 * stack-limited key's stacks; it writes only objects whose ownership marker names one of them.
 */
export interface Caller { accountId: string; baseUrl: string; stacks?: readonly string[] }

/**
 * A stack-limited caller may write an object only while its ownership marker (in `metadata`, as
 * stored, and as the write leaves it) names one of the caller's stacks: 403, nothing written.
 */
function checkStacks(kind: KindDef, caller: Caller, metadata: unknown, what: string): void {
  if (!caller.stacks) return;
  const stack = markerStack(metadata);
  if (stack !== undefined && caller.stacks.includes(stack)) return;
  throw new ApiError('ERR_FORBIDDEN_SCOPE', stackRefusalMessage(caller.stacks, stack === undefined
    ? `${what} carries no ownership marker of ${caller.stacks.length === 1 ? 'it' : 'them'} (metadata: {"managed_by": {"tool": "edgeplane", "stack": …}})`
    : `${what} belongs to stack ${stack}`), { stacks: caller.stacks.join(','), needs: stack === undefined ? 'an ownership marker' : `stack ${stack}` });
}

export interface Page { items: Body[]; more: boolean; lastId?: string }

/** `If-Match` given and not naming the object's current version: 412, nothing written. */
function checkIfMatch(kind: KindDef, row: ObjectRow, ifMatch: string | undefined): void {
  if (ifMatch === undefined || matchesIfMatch(ifMatch, etagOf(row))) return;
  throw new ApiError('ERR_PRECONDITION_FAILED', `${kind.title} ${row.id} changed since the version named by If-Match (now ${etagOf(row)}); read it again`, { etag: etagOf(row) }, { etag: etagOf(row) });
}

/** A child's write changes the response of the parent that embeds it. */
async function touchParent(q: Queryable, kind: KindDef, parentId: string | null | undefined): Promise<void> {
  if (kind.parent && parentId) await bumpVersion(q, parentId);
}

/** Now, to the second, as `created_at` is answered (RFC 3339, UTC). */
function createdAt(): string {
  return `${new Date().toISOString().slice(0, 19)}Z`;
}

function notFound(kind: KindDef, id: string): ApiError {
  return new ApiError('ERR_NOT_FOUND', `${kind.title} ${id} not found`);
}

/**
 * The generic operations over every kind, driven by the kind descriptions: build the stored body
 * from a request, check references and uniqueness in one transaction, serialise responses.
 */
export class Resources {
  /** `secrets`: their sealer seals what is stored (`sealing.ts`); without one, secrets are stored as they come. */
  constructor(private readonly db: Db, private readonly config: KindRuntimeConfig, private readonly secrets?: ServiceSecrets) {}

  /** The same operations on another `Db` (a request's transaction: see `runIdempotent`). */
  withDb(db: Db): Resources {
    return new Resources(db, this.config, this.secrets);
  }

  /**
   * `keep`: the statement that keeps a keyed create's response (`runIdempotent`), given the
   * response; it rides on the object's insert (`insertObjectAlong`), a round trip fewer.
   */
  async create(kind: KindDef, caller: Caller, input: Body, parentId?: string, keep?: (response: Body) => Along): Promise<Body> {
    checkStacks(kind, caller, input.metadata, `the new ${kind.title}`);
    const id = newId(kind.idPrefix);
    const body: Body = {};
    for (const [field, value] of Object.entries(input)) {
      if (!(field in kind.fields)) continue;
      if (value === '' && clearable(kind, field)) continue;
      body[field] = value;
    }
    const ctx = this.hookContext('create', caller, id, body, input, undefined, parentId);
    checkExclusive(kind, input);
    for (const m of kind.modules ?? []) {
      const given = input[m.name];
      body[m.name] = given ? await this.prepareModule(m, given as Body, undefined, ctx) : null;
    }
    await this.prepare(kind, ctx);
    const sealer = await this.sealer();
    if (sealer) sealBody(sealer, kind, body, caller.accountId, id);
    const row = await this.tx(async (q) => {
      // The parent is locked (and its version raised: its response changes) before the child is written.
      if (kind.parent && !(await lockParentForChild(q, caller.accountId, kind.parent.kind, parentId!))) throw notFound(kindByName(kind.parent.kind), parentId!);
      // A stack-limited caller adds children only to parents of its stacks (a route to another stack's edge would serve its hostnames).
      if (kind.parent && caller.stacks) {
        const parent = await getObject(q, caller.accountId, kind.parent.kind, parentId!);
        checkStacks(kind, caller, parent?.body.metadata, `${kindByName(kind.parent.kind).title} ${parentId}`);
      }
      await runEffects(q, kind, 'before', ctx);
      const row = { id, account_id: caller.accountId, kind: kind.name, parent_id: parentId ?? null, body, created_at: createdAt() };
      const view = renderView(kind, { ...row, version: '1' }, caller.baseUrl);
      // The response kept for a key is made from the row about to be written: what the response
      // made from the row read back is (the kept JSON is read back through jsonb alike).
      const inserted = keep
        ? await insertObjectAlong(q, row, view, keep(toResponse(kind, { ...row, version: '1' }, caller.baseUrl, kind.embeds ? new Map() : undefined)))
        : await insertObject(q, row, view);
      await this.checkPerParent(q, kind, parentId);
      await this.writeLinks(q, kind, caller, inserted);
      await runEffects(q, kind, 'after', ctx);
      return inserted;
    });
    // A new object has no children yet.
    return toResponse(kind, row, caller.baseUrl, kind.embeds ? new Map() : undefined);
  }

  async get(kind: KindDef, caller: Caller, id: string, parentId?: string): Promise<Body> {
    if (!kind.embeds) {
      const row = await getObject(this.db, caller.accountId, kind.name, id, { parentId });
      if (!row) throw notFound(kind, id);
      return toResponse(kind, row, caller.baseUrl);
    }
    const found = await getWithChildren(this.db, caller.accountId, kind.name, id, Object.values(kind.embeds), { parentId });
    if (!found) throw notFound(kind, id);
    return toResponse(kind, found.row, caller.baseUrl, byParent(found.children));
  }

  /**
   * `get` as the route answers it. For a kind that embeds children (an edge and its routes): the
   * views stored at their last writes, joined, when every one of them was rendered for this base by
   * this revision (one query, nothing parsed, shaped or serialised); else, and for other kinds,
   * `get`'s answer.
   */
  async getRendered(kind: KindDef, caller: Caller, id: string, parentId?: string): Promise<RenderedJson | Body> {
    const childKind = Object.values(kind.embeds ?? {})[0];
    if (!keepsView(kind) || !childKind) return this.get(kind, caller, id, parentId);
    const found = await getViews(this.db, caller.accountId, kind.name, id, childKind, viewFor(caller.baseUrl), { parentId });
    if (!found) throw notFound(kind, id);
    if (found.view === null) return this.get(kind, caller, id, parentId);
    return new RenderedJson(withChildren(found.view, found.children), found.version);
  }

  async list(kind: KindDef, caller: Caller, opts: { beforeId?: string; limit: number }): Promise<Page> {
    const childKinds = Object.values(kind.embeds ?? {});
    const { rows, more, children: childRows } = await listObjects(this.db, caller.accountId, kind.name, { ...opts, childKinds, childBytes: LIST_PAGE_BYTES });
    const children = byParent(childRows);
    return {
      items: rows.map((r) => toResponse(kind, r, caller.baseUrl, children)),
      more,
      lastId: rows.at(-1)?.id,
    };
  }

  async update(kind: KindDef, caller: Caller, id: string, input: Body, parentId?: string, ifMatch?: string): Promise<Body> {
    const sealer = await this.sealer();
    const row = await this.tx(async (q) => {
      const current = await this.lockedForWrite(q, kind, caller, id, parentId);
      if ('metadata' in input) checkStacks(kind, caller, input.metadata, `the new metadata of ${kind.title} ${id}`);
      // After the look-up: an object that is not there is a 404, whatever the body asks.
      for (const f of kind.immutable ?? []) {
        if (f in input) throw new ApiError('ERR_IMMUTABLE_FIELD', `${f}: cannot be changed after creation; create a new ${kind.title} instead`);
      }
      checkIfMatch(kind, current, ifMatch);
      const body: Body = structuredClone(current.body);
      for (const [field, value] of Object.entries(input)) {
        if (!(field in kind.fields)) continue;
        if (value === '' && clearable(kind, field)) delete body[field];
        else body[field] = value;
      }
      const ctx = this.hookContext('update', caller, id, body, input, current.body, parentId);
      checkExclusive(kind, { ...current.body, ...Object.fromEntries(Object.entries(input).filter(([, v]) => v)) });
      for (const m of kind.modules ?? []) {
        const given = input[m.name];
        // PATCH replaces a module that is given and never deletes one (null or omitted: kept).
        if (given) body[m.name] = await this.prepareModule(m, given as Body, current.body[m.name] as Body | null, ctx);
      }
      return this.storeUpdate(q, kind, caller, current, body, ctx, parentId, sealer);
    });
    return this.respond(kind, caller, row);
  }

  async remove(kind: KindDef, caller: Caller, id: string, parentId?: string, ifMatch?: string): Promise<void> {
    await this.tx(async (q) => {
      const current = await getObject(q, caller.accountId, kind.name, id, { parentId, forUpdate: true });
      if (!current) throw notFound(kind, id);
      checkStacks(kind, caller, current.body.metadata, `${kind.title} ${id}`);
      checkIfMatch(kind, current, ifMatch);
      await this.refuseIfReferenced(q, kind, id);
      await touchParent(q, kind, current.parent_id);
      try {
        await deleteObject(q, id);
      } catch (err) {
        // A reference added by another process after the check above.
        if (isPgError(err, '23503')) await this.refuseIfReferenced(q, kind, id, true);
        throw err;
      }
    });
  }

  async putModule(kind: KindDef, mod: ModuleDef, caller: Caller, id: string, input: Body, parentId?: string, ifMatch?: string): Promise<Body> {
    const sealer = await this.sealer();
    const row = await this.tx(async (q) => {
      const current = await this.lockedForWrite(q, kind, caller, id, parentId);
      checkIfMatch(kind, current, ifMatch);
      const body: Body = structuredClone(current.body);
      const ctx = this.hookContext('update', caller, id, body, { [mod.name]: input }, current.body, parentId);
      checkExclusive(kind, { ...current.body, [mod.name]: input });
      body[mod.name] = await this.prepareModule(mod, input, current.body[mod.name] as Body | null, ctx);
      return this.storeUpdate(q, kind, caller, current, body, ctx, parentId, sealer);
    });
    return this.moduleResponse(mod, row, caller);
  }

  async getModule(kind: KindDef, mod: ModuleDef, caller: Caller, id: string, parentId?: string): Promise<Body> {
    const row = await getObject(this.db, caller.accountId, kind.name, id, { parentId });
    if (!row) throw notFound(kind, id);
    return this.moduleResponse(mod, row, caller);
  }

  /** Resolves with the object's new ETag. */
  async deleteModule(kind: KindDef, mod: ModuleDef, caller: Caller, id: string, parentId?: string, ifMatch?: string): Promise<string> {
    return this.tx(async (q) => {
      const current = await getObject(q, caller.accountId, kind.name, id, { parentId, forUpdate: true });
      if (!current) throw notFound(kind, id);
      checkStacks(kind, caller, current.body.metadata, `${kind.title} ${id}`);
      checkIfMatch(kind, current, ifMatch);
      if (!current.body[mod.name]) throw this.moduleNotConfigured(kind, mod, id);
      const body: Body = { ...current.body, [mod.name]: null };
      const updated = await updateBody(q, id, body, renderView(kind, { ...current, body }, caller.baseUrl));
      await touchParent(q, kind, current.parent_id);
      await this.writeLinks(q, kind, caller, updated, current.body);
      return etagOf(updated);
    });
  }

  // ——— internals ———

  /**
   * What seals the secrets of a body about to be stored that are still in plain text (the
   * request's, or derived): asked before a write's transaction (starting the secrets may read the
   * database, which on PGlite has one connection).
   */
  private async sealer(): Promise<Sealer | undefined> {
    return this.secrets && (await this.secrets.start()).sealer;
  }

  /**
   * One transaction, run again when PostgreSQL picked it as a deadlock victim (two edges swapping
   * hostports lock each other's unique keys in opposite orders) or as a serialization failure.
   * Each attempt re-reads everything, so a retry is the same request arriving a moment later.
   */
  private async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.tx(fn);
      } catch (err) {
        const transient = isPgError(err, '40P01') || isPgError(err, '40001');
        if (!transient) throw err;
        if (attempt >= TX_ATTEMPTS) throw new ApiError('ERR_CONFLICT', 'the object changed concurrently several times in a row; retry the request');
        await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
      }
    }
  }

  private moduleNotConfigured(kind: KindDef, mod: ModuleDef, id: string): ApiError {
    return new ApiError('ERR_MODULE_NOT_CONFIGURED', `${mod.name} is not configured on ${kind.title} ${id}`);
  }

  private moduleResponse(mod: ModuleDef, row: ObjectRow, caller: Caller): Body {
    const kind = kindByName(row.kind);
    const stored = row.body[mod.name] as Body | null;
    if (!stored) throw this.moduleNotConfigured(kind, mod, row.id);
    const out = toResponse(kind, row, caller.baseUrl)[mod.name] as Body;
    // A module is part of its object: its ETag is the object's.
    Object.defineProperty(out, ETAG, { value: etagOf(row) });
    return out;
  }

  private hookContext(op: HookContext['op'], caller: Caller, id: string, body: Body, input: Body, previous: Body | undefined, parentId?: string): HookContext {
    return { op, accountId: caller.accountId, body, previous, input, id, parentId, publicBaseUrl: caller.baseUrl, config: this.config };
  }

  /**
   * Request form → stored form of one module: canonical form, defaults filled in, secrets the
   * request leaves out carried over from the stored module (a client that GETs a module, edits it
   * and PUTs it back must not lose a secret it never saw) unless a field the secret belongs to
   * changed (`secretBoundTo`), then the module's checks (the rules `validate` also runs on
   * manifests) and its derivations.
   */
  private async prepareModule(mod: ModuleDef, given: Body, previous: Body | null | undefined, ctx: HookContext): Promise<Body> {
    const stored: Body = structuredClone(moduleCheckForm(mod, given));
    const carried: string[] = [];
    for (const secret of mod.writeOnly ?? []) {
      // Defaults hold no secrets: a secret in `stored` here is one the request gave.
      if (!previous || hasPath(stored, secret) || !hasPath(previous, secret)) continue;
      const holder = holderOf(stored, secret);
      const bound = mod.secretBoundTo?.[secret] ?? [];
      if (!holder || bound.some((f) => !isDeepStrictEqual(getPath(stored, f), getPath(previous, f)))) continue;
      holder[secret.split('.').at(-1)!] = getPath(previous, secret);
      carried.push(secret);
    }
    mod.check?.(stored, throwingChecks({ previous: previous ?? undefined, carried }));
    return (await mod.prepare?.(stored, { ...ctx, previousModule: previous ?? undefined, carried })) ?? stored;
  }

  /**
   * The rest of every change to a stored object (PATCH, a module's PUT), in its transaction: the
   * kind's hooks, its secrets sealed, its effects, the row with its view, the per-parent limits, the parent's version,
   * the references.
   */
  private async storeUpdate(q: Queryable, kind: KindDef, caller: Caller, current: ObjectRow, body: Body, ctx: HookContext, parentId: string | undefined, sealer: Sealer | undefined): Promise<ObjectRow> {
    await this.prepare(kind, ctx);
    if (sealer) sealBody(sealer, kind, body, caller.accountId, current.id);
    await runEffects(q, kind, 'before', ctx);
    const updated = await updateBody(q, current.id, body, renderView(kind, { ...current, body }, caller.baseUrl));
    await this.checkPerParent(q, kind, parentId);
    await touchParent(q, kind, current.parent_id);
    await this.writeLinks(q, kind, caller, updated, current.body);
    await runEffects(q, kind, 'after', ctx);
    return updated;
  }

  private async prepare(kind: KindDef, ctx: HookContext): Promise<void> {
    checkExclusive(kind, ctx.body);
    kind.hooks?.check?.(ctx.body, throwingChecks({ previous: ctx.previous, carried: [] }));
    await kind.hooks?.prepare?.(ctx);
  }

  /**
   * A kind with a per-parent limit: its writes lock the parent first (as a create does), so two
   * writes to one parent's children cannot both pass the limit, and locks are taken parent first.
   */
  /** The object a PATCH or a module's PUT changes, locked (its parent first), within the caller's stacks. */
  private async lockedForWrite(q: Queryable, kind: KindDef, caller: Caller, id: string, parentId: string | undefined) {
    await this.lockParent(q, kind, caller, parentId);
    const current = await getObject(q, caller.accountId, kind.name, id, { parentId, forUpdate: true });
    if (!current) throw notFound(kind, id);
    checkStacks(kind, caller, current.body.metadata, `${kind.title} ${id}`);
    return current;
  }

  private async lockParent(q: Queryable, kind: KindDef, caller: Caller, parentId: string | undefined): Promise<void> {
    if (kind.perParent && parentId !== undefined) await lockObject(q, caller.accountId, parentId);
  }

  /** The parent's children of this kind, the one just written included, within the kind's `perParent` limit. */
  private async checkPerParent(q: Queryable, kind: KindDef, parentId: string | undefined): Promise<void> {
    if (!kind.perParent || parentId === undefined) return;
    const parentTitle = kindByName(kind.parent!.kind).title;
    const { count, bytes } = await childTotals(q, parentId, kind.name);
    if (count > kind.perParent.count) {
      throw new ApiError('ERR_LIMIT_EXCEEDED', `an ${parentTitle} holds at most ${kind.perParent.count} ${kind.title}s, and ${parentId} has ${count - 1}: delete one first`, { limit: String(kind.perParent.count) });
    }
    if (bytes > kind.perParent.bytes) {
      throw new ApiError('ERR_LIMIT_EXCEEDED', `the ${kind.title}s of an ${parentTitle} hold at most ${mib(kind.perParent.bytes)} of configuration together; with this one, ${parentId}'s would hold ${mib(bytes)}`, { limit_bytes: String(kind.perParent.bytes) });
    }
  }

  /**
   * Records references (checked to exist in the account) and unique keys of a written object.
   * Given the body it replaces (read under the row lock), links that did not change are not
   * rewritten: a module PUT that touches no reference or unique value costs no extra writes.
   */
  private async writeLinks(q: Queryable, kind: KindDef, caller: Caller, row: ObjectRow, previous?: Body): Promise<void> {
    const refs = collectRefs(kind, row.body);
    const stored = refs.filter((r) => r.def.stored !== false);
    const uniques = uniqueKeys(kind, row.body, row);
    const same = <T extends object>(a: T[], b: T[], key: (x: T) => string) =>
      JSON.stringify(a.map(key).sort()) === JSON.stringify(b.map(key).sort());
    const refKey = (r: RefRow) => `${r.field}\u0000${r.to_id}`;
    const uniqueKey = (u: { scope: string; value: string }) => `${u.scope}\u0000${u.value}`;
    if (!previous || !same(stored, collectRefs(kind, previous).filter((r) => r.def.stored !== false), refKey)) {
      await this.writeRefs(q, kind, caller, row, stored, !previous);
    }
    const before = previous ? uniqueKeys(kind, previous, row) : [];
    if (!previous || !same(uniques, before, uniqueKey)) {
      await this.refuseForeignOverlaps(q, caller, uniques.filter((u) => !before.some((b) => uniqueKey(b) === uniqueKey(u))));
      await this.writeUniques(q, row, uniques, !previous);
    }
  }

  /** The values a write adds that may not overlap another account's (`UniqueDef.wildcardOverlaps`). */
  private async refuseForeignOverlaps(q: Queryable, caller: Caller, added: { scope: string; value: string; def: UniqueDef }[]): Promise<void> {
    const byScope = new Map<string, { def: UniqueDef; values: string[] }>();
    for (const u of added) {
      if (!u.def.wildcardOverlaps) continue;
      const entry = byScope.get(u.scope) ?? { def: u.def, values: [] };
      entry.values.push(u.value);
      byScope.set(u.scope, entry);
    }
    for (const [scope, { def, values }] of byScope) {
      const hit = await foreignOverlap(q, scope, caller.accountId, values);
      if (hit !== null) throw new ApiError(def.code, def.wildcardOverlaps!.conflict(hit));
    }
  }

  private async writeRefs(q: Queryable, kind: KindDef, caller: Caller, row: ObjectRow, stored: CollectedRef[], fresh: boolean): Promise<void> {
    const found = await existingIds(q, caller.accountId, stored.map((r) => r.to_id));
    for (const r of stored) {
      if (!found.has(r.to_id)) {
        throw new ApiError('ERR_INVALID_REFERENCE', `${r.label}: ${kindByName(r.def.kind).title} ${r.to_id} does not exist`);
      }
    }
    const acyclic = stored.filter((r) => r.def.acyclic);
    if (acyclic.length) {
      // Serialise reference-graph changes per account so two concurrent updates cannot close a cycle.
      await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`refs:${caller.accountId}`]);
      for (const r of acyclic) {
        if (r.to_id === row.id || (await reaches(q, r.field, [r.to_id], row.id))) {
          throw new ApiError('ERR_REFERENCE_CYCLE', `${r.label}: ${r.to_id} ${r.to_id === row.id ? 'is this ' + kind.title + ' itself' : 'leads back to this ' + kind.title}; references may not form a cycle`);
        }
      }
    }
    try {
      await replaceRefs(q, caller.accountId, row.id, stored.map(({ field, to_id }) => ({ field, to_id })), fresh);
    } catch (err) {
      if (isPgError(err, '23503')) throw new ApiError('ERR_INVALID_REFERENCE', `a referenced object was deleted while this ${kind.title} was written; retry`);
      throw err;
    }
  }

  private async writeUniques(q: Queryable, row: ObjectRow, uniques: { scope: string; value: string; def: UniqueDef }[], fresh: boolean): Promise<void> {
    try {
      await replaceUniques(q, row.id, uniques, fresh);
    } catch (err) {
      if (err instanceof UniqueViolation) {
        const def = uniques.find((u) => u.scope === err.key.scope && u.value === err.key.value)!.def;
        throw new ApiError(def.code, def.conflict(err.key.value));
      }
      throw err;
    }
  }

  private async refuseIfReferenced(q: Queryable, kind: KindDef, id: string, always = false): Promise<void> {
    const users = await referrers(q, id);
    if (users.length === 0 && !always) return;
    const names = users.map((u) => {
      const k = findKind(u.kind);
      if (!k) return u.id;
      const parent = k.parent && u.parent_id ? ` of ${kindByName(k.parent.kind).title} ${u.parent_id}` : '';
      return `${k.title} ${u.id}${parent}`;
    });
    throw new ApiError('ERR_IN_USE', `${kind.title} ${id} is still used by ${names.join(', ') || 'another object'}; remove those references first`);
  }

  private async respond(kind: KindDef, caller: Caller, row: ObjectRow): Promise<Body> {
    if (!kind.embeds) return toResponse(kind, row, caller.baseUrl);
    const children: ObjectRow[] = [];
    for (const childKind of Object.values(kind.embeds)) children.push(...await listChildren(this.db, caller.accountId, childKind, row.id));
    return toResponse(kind, row, caller.baseUrl, byParent(children));
  }
}

/** Child rows by their parent's id, in the order given. */
function byParent(rows: ObjectRow[]): Map<string, ObjectRow[]> {
  const map = new Map<string, ObjectRow[]>();
  for (const c of rows) {
    const list = map.get(c.parent_id!);
    if (list) list.push(c);
    else map.set(c.parent_id!, [c]);
  }
  return map;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(bytes % (1024 * 1024) === 0 ? 0 : 1)} MiB`;
}

/** The `unique_keys` scope of a unique value: service-wide, per parent object or per account. */
export function uniqueScope(u: UniqueDef, row: Pick<ObjectRow, 'parent_id' | 'account_id'>): string {
  if (u.perParent) return `${u.scope}:${row.parent_id}`;
  if (u.perAccount) return `${u.scope}:${row.account_id}`;
  return u.scope;
}

/**
 * At most one module of an exclusive group per object. Also run on the modules a request is about
 * to configure, before they are prepared: a SAML module generates a key pair, not worth doing for
 * a write that is refused anyway.
 */
function checkExclusive(kind: KindDef, body: Body): void {
  for (const [group, members] of exclusiveGroups(kind)) {
    const set = members.filter((m) => body[m]);
    if (set.length > 1) {
      throw new ApiError('ERR_VALIDATION', `${set.join(', ')}: at most one ${group} module (${members.join(', ')}) may be configured on a ${kind.title}`);
    }
  }
}

function exclusiveGroups(kind: KindDef): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const m of kind.modules ?? []) {
    if (!m.exclusiveGroup) continue;
    groups.set(m.exclusiveGroup, [...(groups.get(m.exclusiveGroup) ?? []), m.name]);
  }
  return groups;
}

function uniqueKeys(kind: KindDef, body: Body, row: Pick<ObjectRow, 'parent_id' | 'account_id'>): { scope: string; value: string; def: UniqueDef }[] {
  return (kind.uniques ?? []).flatMap((u) =>
    u.values(body).map((value) => ({ scope: uniqueScope(u, row), value, def: u })),
  );
}

interface CollectedRef extends RefRow { def: RefDef; label: string }

/** Every reference an object's stored body holds: its own fields' and its modules' (ids this service does not store skipped). */
export function collectRefs(kind: KindDef, body: Body): CollectedRef[] {
  const out: CollectedRef[] = [];
  forEachRefValue(kind, body, (def, to_id, module, index) => {
    if (def.onlyPrefix && !to_id.startsWith(def.onlyPrefix + '_')) return;
    const field = module ? `${module.name}.${def.field}` : def.field;
    out.push({ field, to_id, def, label: index === undefined ? field : `${field}[${index}]` });
  });
  return out;
}

