import { execFileSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { manifestFiles } from '../../src/reconciler/manifests/load.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';

afterAll(() => cleanupDirs());

describe('which files are manifests', () => {
  it('every .yaml / .yml file below the root, sorted; not hidden ones, node_modules, or the stack file at the top', () => {
    const root = manifestDir({
      'edgeplane.yaml': 'stack: s\n', 'b.yml': '', 'a.yaml': '', 'notes.txt': '', 'sub/edgeplane.yaml': '', 'sub/c.yaml': '',
      '.hidden.yaml': '', '.git/x.yaml': '', 'node_modules/p/y.yaml': '', 'W.YAML': '', 'x.Yml': '',
    });
    // Upper-case extensions too (a Windows editor's `W.YAML`): skipped, their objects would be pruned.
    expect(manifestFiles(root).map((f) => relative(root, f))).toEqual(['a.yaml', 'b.yml', 'sub/c.yaml', 'sub/edgeplane.yaml', 'W.YAML', 'x.Yml']);
  });

  it('refuses a manifest name that is a link to nothing, or a FIFO, naming it (skipped, its objects would be pruned; read, a FIFO never ends)', () => {
    const dangling = manifestDir({ 'a.yaml': '' });
    symlinkSync(join(dangling, 'moved-away.yaml'), join(dangling, 'edge.yaml'));
    expect(() => manifestFiles(dangling)).toThrow(/edge\.yaml: a symbolic link to .*moved-away\.yaml, which is not there/);
    const fifo = manifestDir({ 'a.yaml': '' });
    execFileSync('mkfifo', [join(fifo, 'pipe.yaml')]);
    expect(() => manifestFiles(fifo)).toThrow(/pipe\.yaml: not a regular file/);
  });

  it('follows a link to a directory (as watch does) and reads each real directory once, loops included', () => {
    const shared = manifestDir({ 'edge.yaml': '', 'deeper/route.yaml': '' });
    const root = manifestDir({ 'own.yaml': '' });
    symlinkSync(shared, join(root, 'shared'));
    symlinkSync(root, join(shared, 'back')); // a loop back to the root
    symlinkSync(join(shared, 'edge.yaml'), join(root, 'linked-file.yaml'));
    symlinkSync(join(root, 'gone'), join(root, 'dangling')); // leads nowhere: not a directory
    expect(manifestFiles(root).map((f) => relative(root, f))).toEqual(['linked-file.yaml', 'own.yaml', 'shared/deeper/route.yaml', 'shared/edge.yaml']);
  });
});
