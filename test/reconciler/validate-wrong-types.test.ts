import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDocument, stringify } from 'yaml';
import { parseSource } from '../../src/reconciler/manifests/load.js';
import { validateManifests } from '../../src/reconciler/manifests/validate.js';
import { resolveSecrets } from '../../src/reconciler/manifests/secrets.js';
import { buildDesired } from '../../src/reconciler/plan/desired.js';
import { diff } from '../../src/reconciler/plan/diff.js';

const FULL = join(import.meta.dirname, '..', '..', 'examples', 'full');
const WRONG: unknown[] = [7, -1, 1.5, 'x', '', true, null, [], [7], ['x'], {}, { x: 1 }, [{}]];

/** Every path of a JSON value (objects and arrays), the root left out. */
function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (!v || typeof v !== 'object') return [];
  const keys: (string | number)[] = Array.isArray(v) ? v.map((_, i) => i) : Object.keys(v);
  return keys.flatMap((k) => [[...at, k], ...paths((v as Record<string | number, unknown>)[k], [...at, k])]);
}

function withValue(doc: unknown, path: (string | number)[], value: unknown): unknown {
  const copy = structuredClone(doc) as Record<string | number, unknown>;
  let holder = copy;
  for (const seg of path.slice(0, -1)) holder = holder[seg] as Record<string | number, unknown>;
  if (value === undefined) delete holder[path[path.length - 1]];
  else holder[path[path.length - 1]] = value;
  return copy;
}

/**
 * A manifest with a value of the wrong type anywhere (a list where a string goes, a number for a
 * map, a field left out) is reported as problems, never thrown: validate must finish and say
 * where. Every field of every document of the full example, with each wrong value, is validated
 * and (when it still validates) planned against an empty account.
 */
describe('wrong types anywhere in a manifest are problems, not crashes', () => {
  const docs = readdirSync(FULL).filter((f) => f.endsWith('.yaml') && f !== 'edgeplane.yaml')
    .flatMap((f) => readFileSync(join(FULL, f), 'utf8').split(/^---$/m).map((t) => parseDocument(t).toJSON() as unknown).filter(Boolean));

  it('covers the example', () => {
    expect(docs.length).toBe(5);
  });

  for (const [i, doc] of docs.entries()) {
    const name = `${(doc as { kind: string }).kind}/${(doc as { name: string }).name}`;
    it(`${name} (document ${i + 1})`, () => {
      let cases = 0;
      for (const path of paths(doc)) {
        for (const value of [...WRONG, undefined]) {
          const text = stringify(withValue(doc, path, value));
          const where = `${path.join('.')} = ${JSON.stringify(value)}`;
          let problems;
          try {
            const parsed = parseSource('m.yaml', text);
            const v = validateManifests(parsed.docs, { stack: 'prod' });
            problems = v.problems;
            if (!v.problems.some((p) => p.severity === 'error')) {
              // The planner's stages on what validation let through: none may throw.
              const s = resolveSecrets(v.objects, 'prod', { env: { SHOP_STRIPE_WEBHOOK_SECRET: 's', SHOP_GITHUB_CLIENT_SECRET: 's', SHOP_OIDC_CLIENT_SECRET: 's' }, cwd: FULL });
              diff(buildDesired(v.objects, s.secrets), [], { stack: 'prod', target: 'https://api.example.test' });
            }
          } catch (err) {
            throw new Error(`${name}: ${where}: threw ${(err as Error).stack}`);
          }
          for (const p of problems) expect(p.line, `${where}: ${p.message}`).toBeGreaterThan(0);
          cases++;
        }
      }
      expect(cases).toBeGreaterThan(10);
    });
  }
});
