import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { DurationsWriter, LongestFirst } from './test/setup/durations.js';

// EDGEPLANE_TEST_REPORT (set by .ci/run) adds a JSON report that .ci/run reads for its
// `N passed, N failed` line.
const report = process.env.EDGEPLANE_TEST_REPORT;

/**
 * Test files share their worker process (isolate: false): the modules each imports (fastify, the
 * validators, PGlite's WebAssembly) are loaded and compiled once per worker, not once per file.
 * A file that changes what other files would import or run with gets a process of its own: one
 * that mocks a module, stubs the environment or a global, or adds a process handler; or one that
 * spies on something or fakes the timers without undoing it in the file (`vi.restoreAllMocks()` or
 * `mockRestore()`; `vi.useRealTimers()`, in a `finally` or an `afterEach`).
 */
const NEEDS_OWN_PROCESS = /\bvi\.(mock|doMock|stubEnv|stubGlobal)\(|\bprocess\.on\(/;
const UNDONE: [RegExp, RegExp][] = [[/\bvi\.spyOn\(/, /\bvi\.restoreAllMocks\(|\.mockRestore\(/], [/\bvi\.useFakeTimers\(/, /\bvi\.useRealTimers\(/]];
const needsOwnProcess = (src: string) => NEEDS_OWN_PROCESS.test(src) || UNDONE.some(([patch, undo]) => patch.test(src) && !undo.test(src));
const TEST_DIR = fileURLToPath(new URL('./test/', import.meta.url));
const ownProcess = (readdirSync(TEST_DIR, { recursive: true }) as string[])
  .filter((f) => f.endsWith('.test.ts') && needsOwnProcess(readFileSync(TEST_DIR + f, 'utf8')))
  .map((f) => `test/${f}`);

/**
 * `npm run test:quick` (`--mode quick`): unit and in-process tests only. It leaves out the
 * process-level tests (test/process/: `edgeplane` and `serve` processes, `npm pack`) and the
 * type-check test, which `npm test` (everything, as CI runs it) keeps.
 */
const QUICK_LEAVES_OUT = ['test/process/**', 'test/architecture/typecheck.test.ts'];

export default defineConfig(({ mode }) => ({
  test: {
    // The tests run `edgeplane` processes from dist/: built first when a source is newer.
    globalSetup: ['test/setup/build.ts'],
    // PGlite is WASM PostgreSQL (~300-700 MB a instance): two worker processes on 2 cores.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Longest files first (test/setup/durations.ts).
    sequence: { sequencer: LongestFirst },
    projects: [
      { extends: true, test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: [...ownProcess, ...(mode === 'quick' ? QUICK_LEAVES_OUT : [])], isolate: false } },
      { extends: true, test: { name: 'isolated', include: ownProcess, exclude: mode === 'quick' ? QUICK_LEAVES_OUT : [], isolate: true } },
    ],
    reporters: [...(report ? ['default', 'json'] : ['default']), ...(process.env.EDGEPLANE_TEST_DURATIONS === 'write' ? [new DurationsWriter()] : [])],
    outputFile: report ? { json: report } : undefined,
  },
}));
