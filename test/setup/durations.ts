import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BaseSequencer, type Reporter, type TestModule, type TestSpecification } from 'vitest/node';

/**
 * Longest files first, so that the two test workers finish together instead of one running a
 * long file alone at the end. The order comes from durations.json: the seconds each file took in
 * a whole run, written by `EDGEPLANE_TEST_DURATIONS=write npm test` (files run are updated, the
 * others kept). vitest's own cache of durations is not used: a fresh clone (CI) has none. A file
 * the table does not know goes first: it may be long.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TABLE = fileURLToPath(new URL('./durations.json', import.meta.url));

function readTable(): Record<string, number> {
  return existsSync(TABLE) ? (JSON.parse(readFileSync(TABLE, 'utf8')) as Record<string, number>) : {};
}

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const table = readTable();
    const seconds = (f: TestSpecification) => table[relative(ROOT, f.moduleId)] ?? Number.POSITIVE_INFINITY;
    return [...files].sort((a, b) => {
      const [x, y] = [seconds(a), seconds(b)];
      return x === y ? a.moduleId.localeCompare(b.moduleId) : y > x ? 1 : -1;
    });
  }
}

/** Writes the files' durations of this run into durations.json (EDGEPLANE_TEST_DURATIONS=write). */
export class DurationsWriter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const table = readTable();
    for (const m of modules) {
      const d = m.diagnostic();
      table[relative(ROOT, m.moduleId)] = Math.round((d.prepareDuration + d.setupDuration + d.collectDuration + d.duration) / 100) / 10;
    }
    const sorted = Object.fromEntries(Object.entries(table).sort(([a], [b]) => a.localeCompare(b)));
    writeFileSync(TABLE, JSON.stringify(sorted, null, 2) + '\n');
  }
}
