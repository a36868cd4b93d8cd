import { createRequire } from 'node:module';
import { schemaKey, sharedAjv, type Validator } from '../contract/validation.js';

/** Where `npm run schemas` writes them (`validators-file.ts`), from this module. */
const GENERATED = '../generated/service-validators.cjs';

let generated: Record<string, Validator | undefined> | undefined;

/**
 * The precompiled validators, required when first needed: 0.8 MB of code that a command which only
 * reads (a plan's lists) never runs, parsed on every start of the embedded service otherwise. A
 * checkout without the file (before `npm run schemas` writes it) has none: every schema is compiled.
 */
function precompiledSet(): Record<string, Validator | undefined> {
  if (!generated) {
    try {
      generated = createRequire(import.meta.url)(GENERATED) as Record<string, Validator | undefined>;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
      generated = {};
    }
  }
  return generated;
}

/** Loads the precompiled validators now (a service about to take writes loads them ahead of its first body). */
export function loadPrecompiled(): void {
  precompiledSet();
}

/** Whether `schema` has a precompiled validator (test/service/precompiled.test.ts: every route's does). */
export function isPrecompiled(schema: unknown): boolean {
  return precompiledSet()[schemaKey(schema)] !== undefined;
}

/**
 * The service's validator for a schema (route bodies, application-user records): precompiled by
 * `npm run schemas` (src/generated/service-validators.cjs), so start-up compiles nothing, and
 * loaded with its first use (`precompiledSet`): what fastify is handed as each route registers is a
 * stand-in that finds the validator when it first validates, and reports its errors as its own. A
 * schema not in that set is compiled then by the service's Ajv instance.
 */
export function serviceValidator(schema: unknown): Validator {
  const key = schemaKey(schema);
  let found: Validator | undefined;
  const validate: Validator = (data: unknown) => {
    found ??= precompiledSet()[key] ?? (sharedAjv().compile(schema as object) as Validator);
    const valid = found(data);
    validate.errors = found.errors;
    return valid;
  };
  return validate;
}
