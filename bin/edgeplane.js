#!/usr/bin/env node
// The installed CLI: the compiled JavaScript in dist/ (`npm run build`, run by `prepare` after a
// clone's `npm ci` and by `prepack` before a package is made).
let main;
try {
  main = await import('../dist/cli/main.js');
} catch (err) {
  // Only when main.js itself is missing: a package main.js imports that is missing (node_modules not
  // installed, or a dependency added since the last `npm ci`) names main.js too, as the importer.
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && /^Cannot find module '[^']*dist[\\/]cli[\\/]main\.js'/.test(String(err.message))) {
    console.error('edgeplane: dist/ is missing: run `npm run build` (or `npm ci`, which builds) in the edgeplane checkout');
    process.exit(1);
  }
  throw err;
}
await main.run(process.argv);
