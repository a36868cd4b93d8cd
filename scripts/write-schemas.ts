// `npm run schemas`: writes the manifest JSON Schema, the precompiled (ajv standalone) manifest
// and service validators, and the service's response serializers (fast-json-stringify standalone),
// all generated from the kind descriptions.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const { GENERATED_DIRS, generatedFiles } = await import('./generated-files.js');
const files = await generatedFiles();
for (const f of files) {
  mkdirSync(dirname(f.path), { recursive: true });
  writeFileSync(f.path, f.text);
  process.stdout.write(`wrote ${relative(process.cwd(), f.path)}\n`);
}
// A schema gone since the last run: its file goes too.
const written = new Set(files.map((f) => f.path));
for (const dir of GENERATED_DIRS) {
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir)) {
    if (!written.has(join(dir, name))) {
      rmSync(join(dir, name));
      process.stdout.write(`removed ${relative(process.cwd(), join(dir, name))}\n`);
    }
  }
}
