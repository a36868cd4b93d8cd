import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRequire } from 'node:module';
import { buildApp } from '../../src/service/app.js';
import { checkUserRecords } from '../../src/service/routes/application-users.js';
import { isPrecompiled, precompiledValidator, serviceValidator } from '../../src/service/precompiled.js';
import { createAjv, schemaKey, sharedAjv } from '../../src/contract/validation.js';
import { serviceSchemas } from '../../src/service/validators-file.js';
import type { Db } from '../../src/store/db.js';
import { disagreements, exampleDocs, mutations, objectsIn } from '../helpers/mutations.js';

afterEach(() => vi.restoreAllMocks());

describe('precompiled service validators (npm run schemas)', () => {
  it('nothing is compiled, at start or at first use: every route body schema is precompiled', async () => {
    const compile = vi.spyOn(sharedAjv(), 'compile');
    const app = await buildApp({ db: {} as Db, startedSecrets: { fingerprintKey: Buffer.alloc(32) } });
    await app.ready();
    await app.close();
    expect(checkUserRecords([{ account_id: 'acc_1', provider_user_id: 7 }])).toEqual(['users[0].identity_provider: is required']);
    const schemas = await serviceSchemas();
    expect(schemas.filter((s) => !isPrecompiled(s))).toEqual([]);
    for (const s of schemas) serviceValidator(s)({}); // each stand-in finds its validator
    expect(compile).not.toHaveBeenCalled();
  });

  it('a stand-in validates as its precompiled validator does, errors included', async () => {
    const schema = (await serviceSchemas()).find((s) => JSON.stringify(s).includes('"backends"'))!;
    const v = serviceValidator(schema);
    expect(v({ backends: [] })).toBe(true);
    expect(v.errors).toBeFalsy();
    expect(v({ backends: 'nope' })).toBe(false);
    expect(v.errors?.map((e) => e.instancePath)).toEqual(['/backends']);
    expect(v({ backends: [] })).toBe(true); // the errors are those of the last call
    expect(v.errors).toBeFalsy();
  });

  it('a validator is loaded from its own file when its schema first validates, not before', async () => {
    const schema = (await serviceSchemas()).find((s) => JSON.stringify(s).includes('"backends"'))!;
    const file = createRequire(import.meta.url).resolve(`../../src/generated/service-validators/${schemaKey(schema)}.cjs`);
    const cache = createRequire(import.meta.url).cache;
    delete cache[file];
    const v = serviceValidator(schema);
    expect(cache[file]).toBeUndefined();
    expect(v({ backends: [] })).toBe(true);
    expect(cache[file]).toBeDefined();
    expect(Object.keys(cache[file]!.exports as object)).toEqual([schemaKey(schema)]);
  });

  it('a schema outside the precompiled set is compiled at its first use, once, and validates as it says', () => {
    const compile = vi.spyOn(sharedAjv(), 'compile');
    const v = serviceValidator({ type: 'object', properties: { label: { type: 'string', maxBytes: 3 } }, additionalProperties: false });
    expect(compile).not.toHaveBeenCalled();
    expect([v({ label: 'abc' }), v({ label: 'éé' })]).toEqual([true, false]);
    expect(compile).toHaveBeenCalledTimes(1);
    expect(v.errors?.map((e) => [e.instancePath, e.message])).toEqual([['/label', 'must be at most 3 bytes (UTF-8)']]);
  });

  it('report exactly what the service’s Ajv configuration compiles, valid or not', async () => {
    const compiled = createAjv();
    const bodies = exampleDocs().flatMap(objectsIn).map(({ kind: _k, name: _n, protect: _p, routes: _r, ...body }) => body);
    const inputs = [...bodies, ...bodies.flatMap(mutations)];
    const differ: unknown[] = [];
    const outcomes = { valid: 0, invalid: 0 };
    for (const schema of await serviceSchemas()) {
      const fresh = compiled.compile(schema);
      const pre = precompiledValidator(schemaKey(schema))!;
      differ.push(...disagreements(pre, fresh, inputs, outcomes));
    }
    expect(differ.slice(0, 3)).toEqual([]);
    expect(outcomes.valid).toBeGreaterThan(100);
    expect(outcomes.invalid).toBeGreaterThan(1000);
  });
});
