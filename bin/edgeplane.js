#!/usr/bin/env node
// The installed CLI: the compiled JavaScript in dist/ (`npm run build`, run by `prepare` after a
// clone's `npm ci` and by `prepack` before a package is made).
// A command that most likely runs on the embedded service starts the service's thread before the
// CLI's modules load (dist/cli/early.js); if that fails, the CLI starts it as it would have.
if (['plan', 'apply', 'destroy'].includes(process.argv[2])) {
  try {
    (await import('../dist/cli/early.js')).startEarly(process.argv.slice(2));
  } catch { /* started by the CLI, as without this */ }
}
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
