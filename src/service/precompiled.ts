import { schemaKey, sharedAjv, type Validator } from '../contract/validation.js';
import { generatedByKey } from './generated-by-key.js';

/**
 * The precompiled validators, where `npm run schemas` writes them (`validators-file.ts`): each in
 * a file of its own, required when its schema first validates: a command loads those of the
 * routes it writes to (a few of some 30, together 0.8 MB of code), none when it only reads.
 */
const generated = generatedByKey<Record<string, Validator>>(new URL('../generated/service-validators/', import.meta.url));

/** The precompiled validator of the schema with this key, undefined when it has none. */
export function precompiledValidator(key: string): Validator | undefined {
  return generated(key)?.[key];
}

/** Whether `schema` has a precompiled validator (test/service/precompiled.test.ts: every route's does). */
export function isPrecompiled(schema: unknown): boolean {
  return precompiledValidator(schemaKey(schema)) !== undefined;
}

/**
 * The service's validator for a schema (route bodies, application-user records): precompiled by
 * `npm run schemas` (src/generated/service-validators/), so start-up compiles nothing, and loaded
 * with its first use: what fastify is handed as each route registers is a stand-in that finds the
 * validator when it first validates (its schema's key is computed then too), and reports its
 * errors as its own. A schema not in the precompiled set is compiled then by the service's Ajv
 * instance.
 */
export function serviceValidator(schema: unknown): Validator {
  let found: Validator | undefined;
  const validate: Validator = (data: unknown) => {
    found ??= precompiledValidator(schemaKey(schema)) ?? (sharedAjv().compile(schema as object) as Validator);
    const valid = found(data);
    validate.errors = found.errors;
    return valid;
  };
  return validate;
}
