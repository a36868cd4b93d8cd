// `npm run schemas`: writes the manifest JSON Schema and the precompiled (ajv standalone) manifest
// and service validators, all generated from the kind descriptions.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const { generatedFiles } = await import('./generated-files.js');
for (const f of await generatedFiles()) {
  writeFileSync(f.path, f.text);
  process.stdout.write(`wrote ${relative(process.cwd(), f.path)}\n`);
}
