import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/** bin/edgeplane.js in a scratch package whose dist/ holds only what each case gives it. */
const work = mkdtempSync(join(tmpdir(), 'edgeplane-bin-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function run(main: string | undefined) {
  const dir = mkdtempSync(join(work, 'pkg-'));
  mkdirSync(join(dir, 'bin'));
  cpSync(join(ROOT, 'bin', 'edgeplane.js'), join(dir, 'bin', 'edgeplane.js'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  if (main !== undefined) {
    mkdirSync(join(dir, 'dist', 'cli'), { recursive: true });
    writeFileSync(join(dir, 'dist', 'cli', 'main.js'), main);
  }
  return spawnSync(process.execPath, [join(dir, 'bin', 'edgeplane.js')], { cwd: work, encoding: 'utf8' });
}

describe('bin/edgeplane.js', () => {
  it('says to build when dist/ is missing', () => {
    const r = run(undefined);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('edgeplane: dist/ is missing: run `npm run build`');
  });

  it('a dependency that is not installed is named as such, not taken for a missing dist/', () => {
    const r = run("import 'edgeplane-no-such-package';\n");
    expect(r.status).toBe(1);
    expect(r.stderr).not.toContain('dist/ is missing');
    expect(r.stderr).toContain("Cannot find package 'edgeplane-no-such-package'");
  });
});
