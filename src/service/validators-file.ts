import { fileURLToPath } from 'node:url';
import type { Db } from '../store/db.js';
import { buildApp } from './app.js';
import { USER_FIELDS_SCHEMA } from './routes/application-users.js';
import { standaloneModule } from '../contract/standalone.js';
import { createAjv, schemaKey } from '../contract/validation.js';

/** Where the precompiled service validators are committed (CommonJS: `precompiled.ts` requires it when first needed). */
export const SERVICE_VALIDATORS_FILE = fileURLToPath(new URL('../generated/service-validators.cjs', import.meta.url));

/**
 * Every schema the service validates with: the body schema of each route, as fastify hands it to
 * the validator compiler of the app `buildApp` builds, and the application-user record fields.
 */
export async function serviceSchemas(): Promise<object[]> {
  // Registering routes touches no database; nothing is requested here.
  const schemas: object[] = [];
  const app = await buildApp({
    db: {} as Db,
    startedSecrets: { fingerprintKey: Buffer.alloc(32) },
    validatorCompiler: ({ schema }) => {
      schemas.push(schema as object);
      return () => true;
    },
  });
  await app.ready();
  await app.close();
  return [...schemas, USER_FIELDS_SCHEMA];
}

/** The service's validators as ajv standalone code (CommonJS), each exported under its schema's key. */
export async function renderServiceValidators(): Promise<string> {
  const ajv = createAjv({ standalone: 'cjs' });
  const refs: Record<string, string> = {};
  for (const schema of await serviceSchemas()) {
    const key = schemaKey(schema);
    if (refs[key]) continue;
    ajv.addSchema(schema, key);
    refs[key] = key;
  }
  return standaloneModule(ajv, 'the service request validators (src/service/precompiled.ts)', refs).js;
}
