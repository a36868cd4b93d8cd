import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { manifestFiles } from '../../src/reconciler/manifests/load.js';

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'ep-files-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(root, name, '..'), { recursive: true });
    writeFileSync(join(root, name), text);
  }
  return root;
}

describe('which files are manifests', () => {
  it('every .yaml / .yml file below the root, sorted; not hidden ones, node_modules, or the stack file at the top', () => {
    const root = tree({
      'edgeplane.yaml': 'stack: s\n', 'b.yml': '', 'a.yaml': '', 'notes.txt': '', 'sub/edgeplane.yaml': '', 'sub/c.yaml': '',
      '.hidden.yaml': '', '.git/x.yaml': '', 'node_modules/p/y.yaml': '',
    });
    expect(manifestFiles(root).map((f) => relative(root, f))).toEqual(['a.yaml', 'b.yml', 'sub/c.yaml', 'sub/edgeplane.yaml']);
  });

  it('follows a link to a directory (as watch does) and reads each real directory once, loops included', () => {
    const shared = tree({ 'edge.yaml': '', 'deeper/route.yaml': '' });
    const root = tree({ 'own.yaml': '' });
    symlinkSync(shared, join(root, 'shared'));
    symlinkSync(root, join(shared, 'back')); // a loop back to the root
    symlinkSync(join(shared, 'edge.yaml'), join(root, 'linked-file.yaml'));
    symlinkSync(join(root, 'gone'), join(root, 'dangling')); // leads nowhere: not a directory
    expect(manifestFiles(root).map((f) => relative(root, f))).toEqual(['linked-file.yaml', 'own.yaml', 'shared/deeper/route.yaml', 'shared/edge.yaml']);
  });
});
