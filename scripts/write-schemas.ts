// `npm run schemas`: writes the manifest JSON Schema and the precompiled (ajv standalone) manifest
// and service validators, all generated from the kind descriptions.
import { mkdirSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

// The service (which the generator builds to collect its route schemas) imports its precompiled
// validators: an empty stub first, so a checkout without them, or with a broken one, still loads
// (every schema is then compiled at start-up) until they are written below.
const serviceStub = new URL('../src/generated/service-validators.js', import.meta.url);
mkdirSync(new URL('.', serviceStub), { recursive: true });
writeFileSync(serviceStub, 'export {};\n');

const { generatedFiles } = await import('./generated-files.js');
for (const f of await generatedFiles()) {
  writeFileSync(f.path, f.text);
  process.stdout.write(`wrote ${relative(process.cwd(), f.path)}\n`);
}
