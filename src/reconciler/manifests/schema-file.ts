import { fileURLToPath } from 'node:url';
import { buildManifestSchema } from './schema.js';

/** Where the generated manifest schema is committed (editors point `yaml-language-server` at it). */
export const MANIFEST_SCHEMA_FILE = fileURLToPath(new URL('../../../schemas/manifest.schema.json', import.meta.url));

export function renderManifestSchema(): string {
  return JSON.stringify(buildManifestSchema(), null, 2) + '\n';
}
