import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';
import { DesiredState } from '../../src/reconciler/watch/desired-state.js';
import { ManifestCache } from '../../src/reconciler/watch/manifest-cache.js';
import { cleanupDirs, copyExample, tempDir } from '../helpers/reconcile.js';
import { fileState } from '../../src/reconciler/watch/files.js';

afterAll(() => cleanupDirs());

/**
 * Watch keeps validation between runs: a saved file is validated again on its own, and the checks
 * across files update their indexes for its objects only. Whatever a save does, the problems must
 * be those of validating every file again (watch-desired.property.test.ts checks the same over
 * random saves).
 */
describe('validation kept between watch runs', () => {
  const saves: [string, string, string, RegExp | null][] = [
    ['a description edited', 'https-edge.yaml', 'description: Public site and partner API', null],
    ['a route named as another one', 'https-edge.yaml', '  - name: api', /duplicate-name/],
    ['a reference to a backend that is not there', 'https-edge.yaml', 'backend: { backend_id: app }           #', /unknown-reference/],
    ['the description back as it was', 'https-edge.yaml', 'description: Public site and partner API', null],
    ['a route match taken twice', 'https-edge.yaml', 'match: /api/', /duplicate-/],
    ['a CA renamed from its own name', 'certificate-authority.yaml', 'name: clients', /renamed-from/],
  ];
  const replacement: Record<string, string> = {
    'a description edited': 'description: Edited in a save',
    'a route named as another one': '  - name: site',
    'a reference to a backend that is not there': 'backend: { backend_id: gone }          #',
    'the description back as it was': 'description: Public site and partner API',
    'a route match taken twice': 'match: /',
    'a CA renamed from its own name': 'name: clients\nrenamed_from: clients',
  };

  it('finds, save after save, what a validation without the memo finds', () => {
    const dir = copyExample('small');
    const cache = new ManifestCache();
    const state = new DesiredState({ stack: 'memo', env: {}, cwd: process.cwd() });
    const both = () => {
      const kept = state.update(cache.loadFiles(dir)).problems.map(formatProblem);
      const fresh = validateDir({ root: dir, stack: 'memo' }).problems.map(formatProblem);
      expect(kept).toEqual(fresh);
      return kept;
    };
    expect(both()).toEqual([]);
    for (const [what, file, from, expected] of saves) {
      const path = join(dir, file);
      const original = readFileSync(path, 'utf8');
      expect(original, what).toContain(from);
      writeFileSync(path, original.replace(from, replacement[what]));
      const problems = both();
      if (expected) expect(problems.join('\n'), what).toMatch(expected);
      else expect(problems, what).toEqual([]);
      writeFileSync(path, original);
      expect(both(), `${what}, undone`).toEqual([]);
    }
  });
});

describe('secret files a watch run read', () => {
  it('one read by two manifest files while it changed between them reads as changed, so the next run reads both again', () => {
    const dir = tempDir('ep-shared-secret-');
    const secret = join(dir, 'shared.txt');
    writeFileSync(secret, 'the-first-shared-value\n');
    const route = (edge: string) => `kind: HTTPSEdge\nname: ${edge}\nhostports: ["${edge}.example.com:443"]\nroutes:\n  - name: sso\n    match_type: path_prefix\n    match: /\n    oidc: { issuer: "https://id.example.com", client_id: web, client_secret: { file: shared.txt } }\n`;
    writeFileSync(join(dir, 'a.yaml'), route('ea'));
    writeFileSync(join(dir, 'm.yaml'), 'kind: FailoverBackend\nname: pool\nbackends: []\n');
    writeFileSync(join(dir, 'z.yaml'), route('ez'));
    const cache = new ManifestCache();
    const state = new DesiredState({ stack: 'shared', env: {}, cwd: dir });
    expect(state.update(cache.loadFiles(dir, dir)).problems).toEqual([]);
    const read = state.secretFiles();
    expect([...read.keys()]).toEqual([secret]);
    expect(read.get(secret)).toBe(fileState(secret));
    // A writer rotates the secret while the run is between the two files that read it.
    const files = cache.loadFiles(dir, dir);
    const middle = files.find((f) => f.path.endsWith('m.yaml'))!;
    const docs = middle.docs;
    // Each look at its documents rewrites the secret (a new length each time): among them is the
    // look as the run reaches it, after the first file read the secret and before the last does.
    let looks = 0;
    Object.defineProperty(middle, 'docs', { get: () => { writeFileSync(secret, `rotated-${'x'.repeat(++looks)}\n`); return docs; } });
    state.update(files);
    expect(looks).toBeGreaterThan(0);
    expect(state.secretFiles().get(secret)).not.toBe(fileState(secret)); // the poll sees a change, and asks for a run
  });
});
