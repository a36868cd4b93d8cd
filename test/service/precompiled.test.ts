import { afterEach, describe, expect, it, vi } from 'vitest';
import * as generated from '../../src/generated/service-validators.js';
import { buildApp } from '../../src/service/app.js';
import { checkUserRecords } from '../../src/service/routes/application-users.js';
import { serviceValidator } from '../../src/service/precompiled.js';
import { createAjv, schemaKey, sharedAjv, type Validator } from '../../src/contract/validation.js';
import { serviceSchemas } from '../../src/service/validators-file.js';
import type { Db } from '../../src/store/db.js';
import { disagreements, exampleDocs, mutations, objectsIn } from '../helpers/mutations.js';

afterEach(() => vi.restoreAllMocks());

describe('precompiled service validators (npm run schemas)', () => {
  it('building the app compiles no schema: every route body schema is precompiled', async () => {
    const compile = vi.spyOn(sharedAjv(), 'compile');
    const app = await buildApp({ db: {} as Db, startedSecrets: { fingerprintKey: Buffer.alloc(32) } });
    await app.ready();
    await app.close();
    expect(checkUserRecords([{ account_id: 'acc_1', provider_user_id: 7 }])).toEqual(['users[0].identity_provider: is required']);
    expect(compile).not.toHaveBeenCalled();
  });

  it('a schema outside the precompiled set is compiled, and validates as it says', () => {
    const compile = vi.spyOn(sharedAjv(), 'compile');
    const v = serviceValidator({ type: 'object', properties: { label: { type: 'string', maxBytes: 3 } }, additionalProperties: false });
    expect(compile).toHaveBeenCalledTimes(1);
    expect([v({ label: 'abc' }), v({ label: 'éé' })]).toEqual([true, false]);
    expect(v.errors?.map((e) => [e.instancePath, e.message])).toEqual([['/label', 'must be at most 3 bytes (UTF-8)']]);
  });

  it('report exactly what the service’s Ajv configuration compiles, valid or not', async () => {
    const compiled = createAjv();
    const bodies = exampleDocs().flatMap(objectsIn).map(({ kind: _k, name: _n, protect: _p, routes: _r, ...body }) => body);
    const inputs = [...bodies, ...bodies.flatMap(mutations)];
    const precompiled = generated as unknown as Record<string, Validator>;
    const differ: unknown[] = [];
    const outcomes = { valid: 0, invalid: 0 };
    for (const schema of await serviceSchemas()) {
      const fresh = compiled.compile(schema);
      const pre = precompiled[schemaKey(schema)];
      differ.push(...disagreements(pre, fresh, inputs, outcomes));
    }
    expect(differ.slice(0, 3)).toEqual([]);
    expect(outcomes.valid).toBeGreaterThan(100);
    expect(outcomes.invalid).toBeGreaterThan(1000);
  });
});
