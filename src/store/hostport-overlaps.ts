import { hostportPlace } from '../kinds/hostport.js';
import type { Queryable } from './db.js';

/**
 * Of `values` (lower-case `host:port`s an account is adding, in `scope` of `unique_keys`), the
 * first that overlaps a value of another account: a wildcard of theirs covers it, or it is a
 * wildcard covering one of theirs. Null when none does.
 *
 * Enforced across processes by advisory locks on the DNS tree, held to the end of the
 * transaction: a wildcard `*.d` takes domain `d` exclusively; every value takes the domains above
 * it shared. Any two overlapping values thus meet on one domain in conflicting modes (`*.d` and
 * `a.d` on `d`; `*.d` and `*.a.d` on `d`), and the second writer looks only once the first has
 * committed. Plain names only share locks: they never wait for each other (an exact repeat is the
 * primary key's to refuse). Keys are taken in one sorted order, each in its strongest mode, so two
 * writers cannot deadlock on them.
 */
export async function foreignOverlap(q: Queryable, scope: string, accountId: string, values: string[]): Promise<string | null> {
  if (values.length === 0) return null;
  const places = values.map((v) => ({ value: v, ...hostportPlace(v) }));
  const exclusive = new Map<string, boolean>();
  for (const p of places) {
    for (const d of p.above) exclusive.set(`${d}:${p.port}`, exclusive.get(`${d}:${p.port}`) ?? false);
    if (p.covers) exclusive.set(`${p.covers}:${p.port}`, true);
  }
  const keys = [...exclusive.keys()].sort();
  await q.query(
    `SELECT CASE WHEN x THEN pg_advisory_xact_lock(hashtext(k)) ELSE pg_advisory_xact_lock_shared(hashtext(k)) END
       FROM unnest($1::text[], $2::boolean[]) AS t(k, x)`,
    [keys.map((k) => `hostport-tree:${scope}:${k}`), keys.map((k) => exclusive.get(k))],
  );

  const covering = [...new Set(places.flatMap((p) => p.coveredBy))];
  if (covering.length) {
    const { rows } = await q.query<{ value: string }>(
      `SELECT u.value FROM unique_keys u JOIN objects o ON o.id = u.object_id
        WHERE u.scope = $1 AND u.value = ANY($2) AND o.account_id <> $3`,
      [scope, covering, accountId],
    );
    const taken = new Set(rows.map((r) => r.value));
    const hit = places.find((p) => p.coveredBy.some((w) => taken.has(w)));
    if (hit) return hit.value;
  }
  for (const p of places) {
    if (!p.covers) continue;
    // Values ending in `.<domain>:<port>`: a prefix of the reversed value (the index of migration 005).
    const suffix = [...`.${p.covers}:${p.port}`].reverse().join('');
    const { rows } = await q.query(
      `SELECT 1 FROM unique_keys u JOIN objects o ON o.id = u.object_id
        WHERE u.scope = $1 AND reverse(u.value) LIKE $2 AND o.account_id <> $3 LIMIT 1`,
      [scope, suffix + '%', accountId],
    );
    if (rows.length) return p.value;
  }
  return null;
}
