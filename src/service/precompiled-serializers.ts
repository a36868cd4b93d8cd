import fastJson from 'fast-json-stringify';
import { schemaKey } from '../contract/validation.js';
import { generatedByKey } from './generated-by-key.js';

export type Serializer = (data: unknown) => string;

/**
 * The precompiled response serializers, where `npm run schemas` writes them
 * (`serializers-file.ts`): each in a file of its own (fast-json-stringify's standalone code: the
 * function it would otherwise build with `new Function` from the schema), required at its
 * schema's first response.
 */
const generated = generatedByKey<Serializer>(new URL('../generated/service-serializers/', import.meta.url));

/** The precompiled serializer of the response schema with this key, undefined when it has none. */
export function precompiledSerializer(key: string): Serializer | undefined {
  return generated(key);
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
