import { createRequire } from 'node:module';
import fastJson from 'fast-json-stringify';
import { schemaKey } from '../contract/validation.js';

/** Where `npm run schemas` writes them (`serializers-file.ts`), from this module: `<key>.cjs` each, and `index.cjs`, their keys. */
const GENERATED = '../generated/service-serializers/';

const require = createRequire(import.meta.url);
let keys: Set<string> | undefined;

export type Serializer = (data: unknown) => string;

/**
 * The keys of the precompiled response serializers, read when first needed. Each is in a file of
 * its own (fast-json-stringify's standalone code: the function it would otherwise build with
 * `new Function` from the schema), required at its schema's first response. A checkout without
 * the files (before `npm run schemas` writes them) has none: every schema is compiled then.
 */
function precompiledKeys(): Set<string> {
  if (!keys) {
    try {
      keys = new Set(require(`${GENERATED}index.cjs`) as string[]);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
      keys = new Set();
    }
  }
  return keys;
}

/** The precompiled serializer of the response schema with this key, undefined when it has none. */
export function precompiledSerializer(key: string): Serializer | undefined {
  return precompiledKeys().has(key) ? (require(`${GENERATED}${key}.cjs`) as Serializer) : undefined;
}

/** Whether a response schema has a precompiled serializer (test/service/precompiled-serializers.test.ts: every route's does). */
export function isSerializerPrecompiled(schema: unknown): boolean {
  return precompiledSerializer(schemaKey(schema)) !== undefined;
}

/**
 * The serializer of a response schema (each route's, and the stored views'): found at its first
 * use, precompiled by `npm run schemas` (src/generated/service-serializers/), else compiled then
 * by fast-json-stringify (a schema changed since: its key differs). Either is fast-json-stringify's
 * code for the schema: the same output, unknown properties dropped.
 */
export function serviceSerializer(schema: unknown): Serializer {
  let found: Serializer | undefined;
  return (data) => (found ??= precompiledSerializer(schemaKey(schema)) ?? fastJson(schema as Parameters<typeof fastJson>[0]))(data);
}
