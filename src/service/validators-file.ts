import { fileURLToPath } from 'node:url';
import type { Db } from '../store/db.js';
import { buildApp } from './app.js';
import { USER_FIELDS_SCHEMA } from './routes/application-users.js';
import { standaloneModule } from '../contract/standalone.js';
import { createAjv, schemaKey } from '../contract/validation.js';
import { keyIndex } from './generated-by-key.js';

/**
 * Where the precompiled service validators are committed: one CommonJS file per schema,
 * `<key>.cjs`, and `index.cjs`, the list of keys (`precompiled.ts` requires the index when first
 * asked, and a schema's file when its first body is validated).
 */
export const SERVICE_VALIDATORS_DIR = fileURLToPath(new URL('../generated/service-validators/', import.meta.url));

/**
 * The schemas the routes of the app `buildApp` builds (status page included) hand fastify: their
 * body schemas, as fastify hands them to the validator compiler, and their response schemas, as it
 * hands them to the serializer compiler. The app is built once for both (`npm run schemas`).
 */
let routeSchemas$: Promise<{ bodies: object[]; responses: object[] }> | undefined;
export function routeSchemas(): Promise<{ bodies: object[]; responses: object[] }> {
  routeSchemas$ ??= (async () => {
    // Registering routes touches no database; nothing is requested here.
    const bodies: object[] = [];
    const responses: object[] = [];
    const app = await buildApp({
      db: {} as Db,
      startedSecrets: { fingerprintKey: Buffer.alloc(32) },
      ui: true,
      validatorCompiler: ({ schema }) => {
        bodies.push(schema as object);
        return () => true;
      },
      serializerCompiler: ({ schema }) => {
        responses.push(schema as object);
        return () => '';
      },
    });
    await app.ready();
    await app.close();
    return { bodies, responses };
  })();
  return routeSchemas$;
}

/** Every schema the service validates with: each route's body schema, and the application-user record fields. */
export async function serviceSchemas(): Promise<object[]> {
  return [...(await routeSchemas()).bodies, USER_FIELDS_SCHEMA];
}

/**
 * The service's validators as ajv standalone code (CommonJS): a file per schema, named by its key
 * and exporting its validator under that key, and the index of keys. One Ajv instance compiles
 * them all (each file holds only what its validator uses), so the code is what one file of them
 * all would hold.
 */
export async function renderServiceValidators(): Promise<{ name: string; text: string }[]> {
  const ajv = createAjv({ standalone: 'cjs' });
  const keys: string[] = [];
  for (const schema of await serviceSchemas()) {
    const key = schemaKey(schema);
    if (keys.includes(key)) continue;
    ajv.addSchema(schema, key);
    keys.push(key);
  }
  const files = keys.map((key) => ({ name: `${key}.cjs`, text: standaloneModule(ajv, `the service request validator of the schema ${key} (src/service/precompiled.ts)`, { [key]: key }).js }));
  return [{ name: 'index.cjs', text: keyIndex(keys, 'service request validators', 'src/service/precompiled.ts') }, ...files];
}
