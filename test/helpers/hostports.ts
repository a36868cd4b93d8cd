import type { Db } from '../../src/store/db.js';
import { newId } from '../../src/util/ids.js';

/**
 * An object holding `hostports` in unique_keys (scope `hostport`), the way HTTPS edges record
 * them: lets the abuse tests say "served by an edge" without depending on the edge kind's rules.
 */
export async function fixtureServing(db: Db, accountId: string, hostports: string[]): Promise<string> {
  const id = newId('edghts');
  await db.tx(async (q) => {
    await q.query(`INSERT INTO objects (id, account_id, kind, body) VALUES ($1, $2, 'httpsEdge', $3)`, [id, accountId, { hostports }]);
    for (const hp of hostports) await q.query(`INSERT INTO unique_keys (scope, value, object_id) VALUES ('hostport', $1, $2)`, [hp, id]);
  });
  return id;
}
