// `npm run schemas`: writes the manifest JSON Schema generated from the kind descriptions.
import { writeFileSync } from 'node:fs';
import { MANIFEST_SCHEMA_FILE, renderManifestSchema } from '../src/reconciler/manifests/schema-file.js';

writeFileSync(MANIFEST_SCHEMA_FILE, renderManifestSchema());
process.stdout.write(`wrote ${MANIFEST_SCHEMA_FILE}\n`);
