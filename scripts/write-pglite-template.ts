// `npm run pglite-template`: makes the embedded engine's new-database template with initdb (see
// src/store/pglite-template.ts). Run it after upgrading PGlite, changing PGLITE_SETTINGS or the migrations; a test
// fails until then (new databases still work meanwhile: initdb makes them).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { PGLITE_SETTINGS, TEMPLATE_META, TEMPLATE_FILE } from '../src/store/pglite-template.js';
import { makeTemplate } from '../src/store/pglite-template-make.js';

const { template, meta } = await makeTemplate(PGLITE_SETTINGS);
mkdirSync(dirname(TEMPLATE_FILE), { recursive: true });
writeFileSync(TEMPLATE_FILE, template);
writeFileSync(TEMPLATE_META, JSON.stringify(meta, null, 2) + '\n');
process.stdout.write(`wrote ${relative(process.cwd(), TEMPLATE_FILE)} (${(template.length / 1e6).toFixed(1)} MB) and ${relative(process.cwd(), TEMPLATE_META)}\n`);
