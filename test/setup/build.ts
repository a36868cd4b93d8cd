import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * vitest's globalSetup: the tests run `edgeplane` processes from the build (test/helpers/cli.ts),
 * so dist/ is brought up to date first, once for the whole run. scripts/build.mjs does nothing
 * when dist/ is newer than every source, and recompiles otherwise: a test never runs a stale build.
 * With EDGEPLANE_TEST_CLI=sources the processes run the sources through tsx instead, and nothing
 * is built.
 */
export default function setup(): void {
  if (process.env.EDGEPLANE_TEST_CLI === 'sources') return;
  const root = fileURLToPath(new URL('../../', import.meta.url));
  try {
    execFileSync(process.execPath, [root + 'scripts/build.mjs'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`the build the tests run failed (node scripts/build.mjs):\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
  }
}
