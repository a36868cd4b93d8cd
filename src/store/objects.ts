import type { Along, Queryable } from './db.js';
import { isStorableText } from '../util/text.js';

/** One stored object of any kind. `body` is its stored form (see src/kinds). */
export interface ObjectRow {
  id: string;
  account_id: string;
  kind: string;
  parent_id: string | null;
  /** RFC 3339, UTC, to the second (`2026-11-22T01:54:48Z`), as responses carry it: formatted by the database. */
  created_at: string;
  body: Record<string, unknown>;
  /** Raised by every write of the object, its modules and its embedded children: the ETag. */
  version: string;
}

/** The columns of `COLS`, as a subquery that selected `COLS` has them. */
const COL_NAMES = 'id, account_id, kind, parent_id, created_at, body, version';
const COLS = `id, account_id, kind, parent_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS created_at, body, version::text AS version`;

/**
 * An object's response as the service rendered it (`view`: JSON text, embedded children left out)
 * and what for (`viewFor`: the renderer's revision and the base URL). Migration 008.
 */
export interface StoredView { view: string; viewFor: string }

/**
 * `value` with every object's keys in the order jsonb keeps them (shorter keys first, then by
 * their UTF-8 bytes): as the body of a row reads back. A view rendered from a body about to be
 * written is then byte for byte what rendering the stored body would give (a header map's keys
 * come back in this order, not in the request's).
 */
export function inJsonbOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inJsonbOrder);
  if (value === null || typeof value !== 'object') return value;
  // Made as JSON.parse makes objects: a key such as `__proto__` (a header name) is a key like any other.
  return Object.fromEntries(Object.keys(value).sort(jsonbKeyOrder).map((k) => [k, inJsonbOrder((value as Record<string, unknown>)[k])]));
}

const ASCII = /^[\x00-\x7f]*$/;

export function jsonbKeyOrder(a: string, b: string): number {
  if (ASCII.test(a) && ASCII.test(b)) return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length - y.length || Buffer.compare(x, y);
}

const INSERT_OBJECT = `INSERT INTO objects (id, account_id, kind, parent_id, body, created_at, view, view_for)
     VALUES ($1, $2, $3, $4, $5, COALESCE($6::timestamptz, now()), $7, $8)`;

type NewObject = Omit<ObjectRow, 'created_at' | 'version'> & { created_at?: string };
const insertParams = (row: NewObject, view?: StoredView) => [row.id, row.account_id, row.kind, row.parent_id, row.body, row.created_at ?? null, view?.view ?? null, view?.viewFor ?? null];

/** A new object; `created_at` (RFC 3339) where the caller picked it (its view holds it), else the database's clock. */
export async function insertObject(q: Queryable, row: NewObject, view?: StoredView): Promise<ObjectRow> {
  const { rows } = await q.query<ObjectRow>(`${INSERT_OBJECT} RETURNING ${COLS}`, insertParams(row, view), { prepared: true });
  return rows[0];
}

/** The text of `insertObjectAlong`'s statement, by the text of what rides along. */
const alongSql = new Map<Along['sql'], string>();

/**
 * `insertObject` with another statement in the same one, as a data-modifying CTE (a keyed
 * create's kept response and the claim of its key, `store/idempotency.ts`): one round trip for
 * all. When it writes fewer rows than `along.rows`, `along.onShort(answer)` is thrown (the
 * transaction must not commit; the object's row, written in the same statement, goes with it).
 */
export async function insertObjectAlong(q: Queryable, row: NewObject, view: StoredView | undefined, along: Along): Promise<ObjectRow> {
  let sql = alongSql.get(along.sql);
  if (!sql) {
    sql = `WITH ${along.sql(9)} ${INSERT_OBJECT} RETURNING ${COLS}, (SELECT count(*) FROM along)::int AS along_rows, ${along.answer ?? 'NULL'} AS along_answer`;
    alongSql.set(along.sql, sql);
  }
  const { rows } = await q.query<ObjectRow & { along_rows: number; along_answer: unknown }>(sql, [...insertParams(row, view), ...along.params], { prepared: true });
  const { along_rows: written, along_answer: answer, ...inserted } = rows[0];
  if (written !== along.rows) throw along.onShort(answer);
  return inserted;
}

export async function getObject(
  q: Queryable, accountId: string, kind: string, id: string, opts: { parentId?: string; forUpdate?: boolean } = {},
): Promise<ObjectRow | null> {
  // An id from a URL may hold text no row can (`%00`): no object has it.
  if (!isStorableText(id) || (opts.parentId !== undefined && !isStorableText(opts.parentId))) return null;
  const params: unknown[] = [id, accountId, kind];
  let sql = `SELECT ${COLS} FROM objects WHERE id = $1 AND account_id = $2 AND kind = $3`;
  if (opts.parentId !== undefined) {
    params.push(opts.parentId);
    sql += ` AND parent_id = $4`;
  }
  if (opts.forUpdate) sql += ' FOR UPDATE';
  const { rows } = await q.query<ObjectRow>(sql, params, { prepared: true });
  return rows[0] ?? null;
}

/**
 * Above every id in the "C" collation ids compare in (migration 003): the bound of a first page.
 * Without statistics the planner costs `account_id = … AND kind = …` alone as a couple of rows,
 * and chose to read and sort every object of the kind for a first page; with a bound on `id` it
 * picks the backward index scan, which stops after the page.
 */
const ABOVE_EVERY_ID = '\u{10FFFF}';

type PartRow = ObjectRow & { part: number };

/** The rows of one query over several parts (`part` 0: the objects asked for, 1…: children by kind). */
function splitParts(rows: PartRow[]): { own: ObjectRow[]; children: ObjectRow[] } {
  const own: ObjectRow[] = [];
  const children: ObjectRow[] = [];
  for (const r of rows) {
    const row: ObjectRow = { id: r.id, account_id: r.account_id, kind: r.kind, parent_id: r.parent_id, created_at: r.created_at, body: r.body, version: r.version };
    (r.part === 0 ? own : children).push(row);
  }
  return { own, children };
}

const withChildrenSqls = new Map<string, string>();

/** The query of `getWithChildren` (its text is also the prepared statement's name: built once). */
function withChildrenSql(childKinds: number, inParent: boolean): string {
  const key = `${childKinds}/${inParent}`;
  let sql = withChildrenSqls.get(key);
  if (!sql) {
    sql = `SELECT 0 AS part, ${COLS} FROM objects WHERE id = $1 AND account_id = $2 AND kind = $3`;
    let n = 3;
    if (inParent) sql += ` AND parent_id = $${++n}`;
    for (let i = 1; i <= childKinds; i++) {
      sql += ` UNION ALL SELECT ${i}, ${COLS} FROM objects WHERE account_id = $2 AND kind = $${++n} AND parent_id = $1`;
    }
    sql = `SELECT json_agg(u ORDER BY part, id)::text AS parts FROM (${sql}) u`;
    withChildrenSqls.set(key, sql);
  }
  return sql;
}

/**
 * One object and its children of `childKinds` (an edge and its routes), in one query: the object,
 * then each child kind's rows in creation order. Children are looked up by their parent through
 * `objects_children` (migration 004). The rows come as one JSON array in one row: the driver reads
 * one value and the service parses one text, where six rows cost six row objects, six parses and
 * six dates (about a fifth of the CPU of bench:api's GET edge).
 */
export async function getWithChildren(
  q: Queryable, accountId: string, kind: string, id: string, childKinds: string[], opts: { parentId?: string } = {},
): Promise<{ row: ObjectRow; children: ObjectRow[] } | null> {
  if (!isStorableText(id) || (opts.parentId !== undefined && !isStorableText(opts.parentId))) return null;
  const params: unknown[] = [id, accountId, kind];
  if (opts.parentId !== undefined) params.push(opts.parentId);
  params.push(...childKinds);
  const { rows } = await q.query<{ parts: string | null }>(withChildrenSql(childKinds.length, opts.parentId !== undefined), params, { prepared: true });
  if (rows[0]?.parts == null) return null;
  const parts = JSON.parse(rows[0].parts) as PartRow[];
  if (parts[0].part !== 0) return null;
  return { row: parts[0], children: parts.slice(1) };
}

/**
 * An object's stored view and its children's of `childKind` (joined with commas, in creation
 * order), in one query, where all of them were rendered for `viewFor`; `view` null where any was
 * not (never rendered, another base, another revision): the caller renders the response itself.
 * Null when the account has no such object.
 */
export async function getViews(
  q: Queryable, accountId: string, kind: string, id: string, childKind: string, viewFor: string, opts: { parentId?: string } = {},
): Promise<{ version: string; view: string | null; children: string | null } | null> {
  if (!isStorableText(id) || (opts.parentId !== undefined && !isStorableText(opts.parentId))) return null;
  const params: unknown[] = [id, accountId, kind, childKind, viewFor];
  if (opts.parentId !== undefined) params.push(opts.parentId);
  const { rows } = await q.query<{ version: string; view: string | null; children: string | null }>(
    `SELECT o.version::text AS version, CASE WHEN o.view_for = $5 AND c.fresh THEN o.view END AS view, c.views AS children
     FROM objects o CROSS JOIN LATERAL (
       SELECT string_agg(view, ',' ORDER BY id) AS views, COALESCE(bool_and(view_for IS NOT DISTINCT FROM $5), true) AS fresh
       FROM objects WHERE account_id = $2 AND kind = $4 AND parent_id = o.id) c
     WHERE o.id = $1 AND o.account_id = $2 AND o.kind = $3${opts.parentId !== undefined ? ' AND o.parent_id = $6' : ''}`,
    params, { prepared: true });
  return rows[0] ?? null;
}

/**
 * Objects of a top-level kind (the kinds that have lists), newest first, strictly older than
 * `beforeId`; `limit + 1` rows tell whether more remain. With `childKinds`, the children of the
 * page's objects (not of the extra row) come in the same query, each kind in creation order: a
 * page costs one round trip whatever it holds.
 */
export async function listObjects(
  q: Queryable, accountId: string, kind: string, opts: { beforeId?: string; limit: number; childKinds?: string[]; childBytes?: number },
): Promise<{ rows: ObjectRow[]; more: boolean; children: ObjectRow[] }> {
  const params: unknown[] = [accountId, kind, opts.beforeId ?? ABOVE_EVERY_ID, opts.limit + 1];
  // `parent_id IS NULL` names the index of top-level objects (migration 004).
  const page = `SELECT ${COLS} FROM objects WHERE account_id = $1 AND kind = $2 AND parent_id IS NULL AND id < $3 ORDER BY id DESC LIMIT $4`;
  const childKinds = opts.childKinds ?? [];
  if (childKinds.length === 0) {
    const { rows } = await q.query<ObjectRow>(page, params);
    return { rows: rows.slice(0, opts.limit), more: rows.length > opts.limit, children: [] };
  }
  params.push(opts.limit);
  const parts = childKinds.map((childKind, i) => {
    params.push(childKind);
    // The ORDER BY keeps the lateral subquery from being flattened into a join: without statistics
    // the page is costed as one row, and the planner then scanned every child of the account once
    // and matched them to the page's ids instead of looking each parent's children up.
    return `SELECT ${i + 1} AS part, c.* FROM (SELECT id FROM page ORDER BY id DESC LIMIT $5) p CROSS JOIN LATERAL
      (SELECT ${COLS} FROM objects WHERE account_id = $1 AND kind = $${params.length} AND parent_id = p.id ORDER BY id) c`;
  });
  params.push(opts.childBytes ?? Number.MAX_SAFE_INTEGER);
  // With `childBytes`, the page ends before the first parent (after the first, always kept whole)
  // whose children take the running total of their stored bodies as text (plus
  // `ROW_OVERHEAD_BYTES` each), in page order, past it: `cut` is that parent's id, and neither it
  // nor the parents after it (smaller ids) nor their children are sent.
  const { rows } = await q.query<PartRow & { cut_id: string | null }>(
    `WITH page AS MATERIALIZED (${page}),
     kids AS MATERIALIZED (${parts.join(' UNION ALL ')}),
     cut AS (
       SELECT max(parent_id) AS id FROM (
         SELECT parent_id, sum(octet_length(body::text) + ${ROW_OVERHEAD_BYTES}) OVER (ORDER BY parent_id DESC, part, id) AS running FROM kids
       ) s WHERE running > $${params.length} AND parent_id < (SELECT max(id) FROM page)
     )
     SELECT u.*, (SELECT id FROM cut) AS cut_id
       FROM (SELECT 0 AS part, ${COL_NAMES} FROM page UNION ALL SELECT * FROM kids) u
      WHERE (SELECT id FROM cut) IS NULL OR (CASE WHEN part = 0 THEN id ELSE parent_id END) > (SELECT id FROM cut)
      ORDER BY part, CASE WHEN part = 0 THEN id END DESC, id`,
    params,
  );
  const { own, children } = splitParts(rows);
  const cut = rows[0]?.cut_id != null;
  return { rows: own.slice(0, opts.limit), more: cut || own.length > opts.limit, children };
}

/** Children of one parent, oldest first (creation order). */
export async function listChildren(q: Queryable, accountId: string, kind: string, parentId: string): Promise<ObjectRow[]> {
  const { rows } = await q.query<ObjectRow>(
    `SELECT ${COLS} FROM objects WHERE account_id = $1 AND kind = $2 AND parent_id = $3 ORDER BY id`,
    [accountId, kind, parentId],
  );
  return rows;
}

/** What one row is counted for in a page's byte budget besides its body: its id, uri, dates. */
export const ROW_OVERHEAD_BYTES = 256;

/** How many objects of `kind` one parent holds, and their stored bodies' size as text. */
export async function childTotals(q: Queryable, parentId: string, kind: string): Promise<{ count: number; bytes: number }> {
  const { rows } = await q.query<{ n: string | number; bytes: string | number }>(
    'SELECT count(*) AS n, coalesce(sum(octet_length(body::text)), 0) AS bytes FROM objects WHERE parent_id = $1 AND kind = $2',
    [parentId, kind],
  );
  return { count: Number(rows[0].n), bytes: Number(rows[0].bytes) };
}

/** Locks one object's row for the rest of the transaction (a parent whose children are written). */
export async function lockObject(q: Queryable, accountId: string, id: string): Promise<void> {
  if (!isStorableText(id)) return; // no row holds it (`%00` in a URL): what follows finds nothing, a 404
  await q.query('SELECT 1 FROM objects WHERE id = $1 AND account_id = $2 FOR UPDATE', [id, accountId]);
}

/** A new body; its view with it, or none (a write without one leaves no view behind to go stale). */
export async function updateBody(q: Queryable, id: string, body: Record<string, unknown>, view?: StoredView): Promise<ObjectRow> {
  const { rows } = await q.query<ObjectRow>(
    `UPDATE objects SET body = $2, version = version + 1, view = $3, view_for = $4 WHERE id = $1 RETURNING ${COLS}`,
    [id, body, view?.view ?? null, view?.viewFor ?? null],
  );
  return rows[0];
}

/**
 * The parent of a child about to be created, locked and its version raised in one statement (a
 * new route changes its edge's response). False when the account has no such object.
 */
export async function lockParentForChild(q: Queryable, accountId: string, kind: string, id: string): Promise<boolean> {
  if (!isStorableText(id)) return false; // an id from a URL no row can hold (`%00`), as in `getObject`
  const { rows } = await q.query('UPDATE objects SET version = version + 1 WHERE id = $1 AND account_id = $2 AND kind = $3 RETURNING id', [id, accountId, kind]);
  return rows.length > 0;
}

/** A write of an embedded child (a route) changes its parent's response: the parent's version is raised with it. */
export async function bumpVersion(q: Queryable, id: string): Promise<void> {
  await q.query('UPDATE objects SET version = version + 1 WHERE id = $1', [id]);
}

export async function deleteObject(q: Queryable, id: string): Promise<void> {
  await q.query('DELETE FROM objects WHERE id = $1', [id]);
}

export interface RefRow { field: string; to_id: string }

/**
 * Replaces the recorded outgoing references of an object. `fresh`: the object was inserted in this
 * transaction, so it has none to remove.
 */
export async function replaceRefs(q: Queryable, accountId: string, fromId: string, refs: RefRow[], fresh = false): Promise<void> {
  if (!fresh) await q.query('DELETE FROM object_refs WHERE from_id = $1', [fromId]);
  if (refs.length === 0) return;
  await q.query(
    `INSERT INTO object_refs (account_id, from_id, field, to_id)
     SELECT $1, $2, r.field, r.to_id FROM unnest($3::text[], $4::text[]) AS r(field, to_id)
     ON CONFLICT DO NOTHING`,
    [accountId, fromId, refs.map((r) => r.field), refs.map((r) => r.to_id)],
  );
}

/** Which of `ids` exist in the account (as objects of any kind). */
export async function existingIds(q: Queryable, accountId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await q.query<{ id: string }>('SELECT id FROM objects WHERE account_id = $1 AND id = ANY($2)', [accountId, ids]);
  return new Set(rows.map((r) => r.id));
}

/** Objects referring to `id`, with their kind, for "still in use" messages. */
export async function referrers(q: Queryable, id: string): Promise<{ id: string; kind: string; parent_id: string | null }[]> {
  const { rows } = await q.query<{ id: string; kind: string; parent_id: string | null }>(
    `SELECT DISTINCT o.id, o.kind, o.parent_id FROM object_refs r JOIN objects o ON o.id = r.from_id WHERE r.to_id = $1 ORDER BY o.id`,
    [id],
  );
  return rows;
}

/** Whether following references from `startIds` (within `field`) reaches `targetId`. */
export async function reaches(q: Queryable, field: string, startIds: string[], targetId: string): Promise<boolean> {
  if (startIds.length === 0) return false;
  const { rows } = await q.query(
    `WITH RECURSIVE walk(id) AS (
       SELECT unnest($1::text[]) COLLATE "C" -- the collation of object_refs.to_id (migration 003)
       UNION
       SELECT r.to_id FROM object_refs r JOIN walk w ON r.from_id = w.id WHERE r.field = $2
     ) SELECT 1 FROM walk WHERE id = $3 LIMIT 1`,
    [startIds, field, targetId],
  );
  return rows.length > 0;
}

export interface UniqueRow { scope: string; value: string }

export class UniqueViolation extends Error {
  constructor(readonly key: UniqueRow) {
    super(`${key.scope} ${key.value} is taken`);
  }
}

/**
 * Replaces the unique keys an object holds (`fresh`: inserted in this transaction, it holds none
 * yet). One insert per key, so the key already held by another
 * object (the primary key's 23505, raised across processes too) is known and can be named.
 */
export async function replaceUniques(q: Queryable, objectId: string, keys: UniqueRow[], fresh = false): Promise<void> {
  if (!fresh) await q.query('DELETE FROM unique_keys WHERE object_id = $1', [objectId]);
  for (const key of keys) {
    try {
      await q.query('INSERT INTO unique_keys (scope, value, object_id) VALUES ($1, $2, $3)', [key.scope, key.value, objectId]);
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new UniqueViolation(key);
      throw err;
    }
  }
}

/**
 * Objects whose `metadata` names `stack` in an ownership marker, by kind and id, at most `limit`:
 * one query in place of reading every object a page at a time. The marker is canonical JSON with
 * sorted keys, so its `"stack":…,"tool":…` pair stands in its text as written here; the caller
 * parses each row's metadata to confirm it (the text may also sit inside a user's own string).
 */
export async function objectsNamingStack(q: Queryable, accountId: string, stack: string, limit: number): Promise<{ id: string; kind: string; metadata: string }[]> {
  const pattern = `%${JSON.stringify({ stack, tool: 'edgeplane' }).slice(1, -1).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const { rows } = await q.query<{ id: string; kind: string; metadata: string }>(
    `SELECT id, kind, body->>'metadata' AS metadata FROM objects WHERE account_id = $1 AND body->>'metadata' LIKE $2 ORDER BY kind, id LIMIT $3`,
    [accountId, pattern, limit],
  );
  return rows;
}
