import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/store/db.js';
import { inJsonbOrder } from '../../src/store/objects.js';
import { ENGINES, openTestDb } from '../helpers/service.js';

/**
 * A view is rendered from a body before it is written (`renderView`): its maps must list their keys
 * as the stored body reads back, or a GET answered from the view and one shaped from the body
 * would differ in bytes. `inJsonbOrder` is held to the database's own order here.
 */
describe.each(ENGINES)('jsonb key order on %s', (engine) => {
  let db: Db;
  let drop: () => Promise<void>;
  beforeAll(async () => ({ db, drop } = await openTestDb(engine)));
  afterAll(async () => drop?.());

  it('orders keys as jsonb keeps them, nested objects and non-ASCII keys included', async () => {
    const key = fc.string({ unit: fc.constantFrom('a', 'B', 'z', '-', '1', 'é', 'Ω', '日', '😀', 'ﬀ', '_'), maxLength: 5 });
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, fc.integer(), fc.string({ maxLength: 3 }), fc.dictionary(key, tie('node'), { maxKeys: 6 }), fc.array(tie('node'), { maxLength: 3 })),
    })).node;
    await fc.assert(fc.asyncProperty(fc.dictionary(key, value, { maxKeys: 8 }), async (body) => {
      const { rows } = await db.query<{ back: string }>('SELECT $1::jsonb::text AS back', [JSON.stringify(body)]);
      // What the database hands back, parsed as a row's body is, against the order worked out here.
      expect(JSON.stringify(inJsonbOrder(body))).toBe(JSON.stringify(JSON.parse(rows[0].back)));
    }), { numRuns: 200 });
  });
});
