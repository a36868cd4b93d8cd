import { defineConfig } from 'vitest/config';

// EDGEPLANE_TEST_REPORT (set by .ci/run) adds a JSON report that .ci/run reads for its
// `N passed, N failed` line.
const report = process.env.EDGEPLANE_TEST_REPORT;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The tests run `edgeplane` processes from dist/: built first when a source is newer.
    globalSetup: ['test/setup/build.ts'],
    // PGlite is WASM PostgreSQL (~300-700 MB a instance): a fork per file, two at a time on 2 cores.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: report ? ['default', 'json'] : ['default'],
    outputFile: report ? { json: report } : undefined,
  },
});
