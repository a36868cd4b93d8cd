import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { manifestFiles, manifestFilesOrRefuse } from '../../src/reconciler/manifests/load.js';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';
import { ManifestCache } from '../../src/reconciler/watch/manifest-cache.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';

afterAll(() => cleanupDirs());

describe('which files are manifests', () => {
  it('every .yaml / .yml file below the root, sorted; not hidden ones, node_modules, the stack file at the top, or another stack\'s directory', () => {
    const root = manifestDir({
      'edgeplane.yaml': 'stack: s\n', 'b.yml': '', 'a.yaml': '', 'notes.txt': '', 'sub/c.yaml': '', 'other/edgeplane.yml': 'stack: o\n', 'other/d.yaml': '',
      'other/deeper/e.yaml': '', '.hidden.yaml': '', '.git/x.yaml': '', 'node_modules/p/y.yaml': '', 'W.YAML': '', 'x.Yml': '',
    });
    // Upper-case extensions too (a Windows editor's `W.YAML`): skipped, their objects would be pruned.
    const nested: string[] = [];
    expect(manifestFiles(root, nested).map((f) => relative(root, f))).toEqual(['a.yaml', 'b.yml', 'sub/c.yaml', 'W.YAML', 'x.Yml']);
    expect(nested.map((f) => relative(root, f))).toEqual(['other/edgeplane.yml']);
  });

  it('plan, validate and watch say which stack a directory left out is; one naming this same stack, or none, is an error', async () => {
    const fb = 'kind: FailoverBackend\nname: a\nbackends: []\n';
    const root = manifestDir({ 'edgeplane.yaml': 'stack: s\n', 'a.yaml': fb, 'eu/edgeplane.yaml': 'stack: eu\n', 'eu/b.yaml': fb });
    const v = validateDir({ root, stack: 's', cwd: root });
    expect(v.problems.map(formatProblem)).toEqual(['eu/edgeplane.yaml:1:1: warning: this directory is stack "eu"\'s (its own edgeplane.yaml): nothing in it is read here; plan it on its own [nested-stack]']);
    expect(v.objects.map((o) => o.identity)).toEqual(['FailoverBackend/a']);
    const files = new ManifestCache().loadFiles(root, root, 's');
    expect(files.map((f) => [relative(root, f.path), f.docs.length, f.problems.map((p) => `${p.severity} ${p.rule}`)])).toEqual([['a.yaml', 1, []], ['eu/edgeplane.yaml', 0, ['warning nested-stack']]]);
    // Its manifests would be this stack's: planned without them, their objects would be deleted.
    for (const [settings, says] of [['stack: s\n', /naming this same stack "s": a stack is planned from one directory/], ['# nothing\n', /naming no stack: name its stack/], ['stack: [x]\n', /which does not read \(.*\): whether its manifests are another stack's cannot be told/]] as const) {
      writeFileSync(join(root, 'eu', 'edgeplane.yaml'), settings);
      const again = validateDir({ root, stack: 's', cwd: root }).problems;
      expect(again.map((p) => `${p.severity} ${p.rule}`), settings).toEqual(['error nested-stack']);
      expect(again[0].message, settings).toMatch(says);
    }
    // A link to nothing by that name cannot be read (it is not "no stack"); a directory by that name is a directory.
    rmSync(join(root, 'eu', 'edgeplane.yaml'));
    symlinkSync(join(root, 'gone.yaml'), join(root, 'eu', 'edgeplane.yaml'));
    const dangling = validateDir({ root, stack: 's', cwd: root }).problems;
    expect(dangling.map((p) => p.message)).toEqual([expect.stringMatching(/which cannot be read \(ENOENT\): whether its manifests are another stack's cannot be told/)]);
    rmSync(join(root, 'eu', 'edgeplane.yaml'));
    mkdirSync(join(root, 'eu', 'edgeplane.yaml'));
    expect(validateDir({ root, stack: 's', cwd: root }).problems.filter((p) => p.rule === 'nested-stack')).toEqual([]);
  });

  it('a directory holding only other stacks\' directories is refused naming them, not as an empty one', () => {
    const root = manifestDir({ 'a/edgeplane.yaml': 'stack: a\n', 'a/x.yaml': '', 'b/edgeplane.yml': 'stack: b\n' });
    expect(() => manifestFilesOrRefuse(root)).toThrow(/no manifest files here, only directories with an edgeplane\.yaml of their own \(a\/, b\/\): each is a stack planned on its own \(edgeplane plan .*\/a\/\)/);
  });

  it('refuses a link to a directory that holds the stack\'s (it would read the stacks beside it)', () => {
    const parent = manifestDir({ 'mine/a.yaml': '', 'theirs/edgeplane.yaml': 'stack: t\n', 'theirs/b.yaml': '', 'loose.yaml': '' });
    symlinkSync(parent, join(parent, 'mine', 'up'));
    expect(() => manifestFiles(join(parent, 'mine'))).toThrow(/mine\/up: a link to .*, which holds this stack's directory .*mine: reading it would read this stack's manifests again, and every directory beside them; remove the link/);
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
