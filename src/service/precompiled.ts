import * as generated from '../generated/service-validators.js';
import { schemaKey, sharedAjv, type Validator } from '../contract/validation.js';

const precompiled = generated as unknown as Record<string, Validator | undefined>;

/**
 * The service's validator for a schema (route bodies, application-user records): precompiled by
 * `npm run schemas` (src/generated/service-validators.js), so start-up compiles nothing. A schema
 * not in that set is compiled by the service's Ajv instance; test/service/precompiled.test.ts
 * checks that no known schema needs it.
 */
export function serviceValidator(schema: unknown): Validator {
  return precompiled[schemaKey(schema)] ?? (sharedAjv().compile(schema as object) as Validator);
}
