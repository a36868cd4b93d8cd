import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it, expect } from 'vitest';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { planFromState } from '../helpers/plan-lists.js';
import { renderJson } from '../../src/reconciler/render/json.js';
import { renderMarkdown } from '../../src/reconciler/render/markdown.js';
import { renderText } from '../../src/reconciler/render/text.js';
import { summarize } from '../../src/reconciler/plan/scope.js';
import { expandObserved, golden } from '../helpers/scenario.js';

const ROOT = join(import.meta.dirname, '..', 'scenarios');
const CWD = join(import.meta.dirname, '..', '..');

interface Options {
  stack?: string; adopt?: boolean; env?: Record<string, string>; threshold?: { ratio: number; minOwned: number };
  /** `--target`, `--destroy`, `safety.protect` of the stack file, `--allow-protected-changes`. */
  targets?: string[]; destroy?: boolean; protect?: string[]; allowProtected?: boolean;
}

/**
 * Scenario folders: `manifests/` + `observed.json` (list bodies) + `options.json`, and the expected
 * plan as text, JSON and Markdown. Each folder is one planner rule a user relies on (README.md in
 * the folder says which).
 */
describe('planner scenarios', () => {
  for (const name of readdirSync(ROOT).sort()) {
    const dir = join(ROOT, name);
    it(name, async () => {
      const opts: Options = existsSync(join(dir, 'options.json')) ? JSON.parse(readFileSync(join(dir, 'options.json'), 'utf8')) : {};
      const stack = opts.stack ?? 'prod';
      const observed = existsSync(join(dir, 'observed.json')) ? JSON.parse(readFileSync(join(dir, 'observed.json'), 'utf8')) : {};
      const root = relative(CWD, join(dir, 'manifests'));
      const r = await planFromState({
        root, cwd: CWD, stack, env: opts.env ?? {}, adopt: opts.adopt, threshold: opts.threshold,
        targets: opts.targets, destroy: opts.destroy, protect: opts.protect, allowProtected: opts.allowProtected,
        adoptCommand: `edgeplane plan ${root} --stack ${stack} --adopt`,
      }, expandObserved(observed, stack), 'https://api.example.test', { pageSize: 2 }); // pages of 2: paired as they arrive
      expect(r.problems.filter((p) => p.severity === 'error').map(formatProblem)).toEqual([]);
      // A partial plan counts its objects again from its steps (scope.ts): the count must be the planner's.
      expect(summarize(r.plan!.steps)).toEqual(r.plan!.summary);
      golden(join(dir, 'expected.txt'), renderText(r.plan!));
      golden(join(dir, 'expected.json'), renderJson(r.plan!));
      golden(join(dir, 'expected.md'), renderMarkdown(r.plan!));
    });
  }
});
