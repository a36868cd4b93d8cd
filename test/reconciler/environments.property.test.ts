import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { selectEnvironment } from '../../src/reconciler/manifests/environments.js';
import { escapeText } from '../../src/reconciler/manifests/variables.js';
import { freshStackFile, parseAsVariable, writeBackVariables } from '../../src/reconciler/export/variables.js';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';

/**
 * For random variable values: the manifests rendered for them, then written out as export writes
 * them (values as they are, `${` escaped as `$${`), read back to the same desired state.
 */
/** A label of a hostname, and text of any kind (no NUL, no lone surrogate: YAML cannot hold them). */
const label = fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/);
const text = fc.string({ maxLength: 30 }).filter((s) => !/[\0\ud800-\udfff]/.test(s));

/** The stack file both properties plan with: three typed variables, one environment setting them. */
function writeStackFile(dir: string, values: { domain: string; note: string; share: number }): void {
  writeFileSync(join(dir, 'edgeplane.yaml'), stringify({
    stack: 'prop',
    variables: { domain: { type: 'string' }, note: { type: 'string' }, share: { type: 'number' } },
    environments: { one: { values } },
  }));
}

describe('variables: rendering then writing back is the identity', () => {
  it('random values (text with ${, $${, lists, numbers) round-trip', () => {
    fc.assert(fc.property(fc.array(label, { minLength: 1, maxLength: 3 }), text, fc.double({ min: 0, max: 1, noNaN: true }), (labels, note, share) => {
      const dir = mkdtempSync(join(tmpdir(), 'ep-envs-prop-'));
      try {
        const domain = labels.join('.') + '.example.com';
        writeStackFile(dir, { domain, note, share });
        writeFileSync(join(dir, 'edge.yaml'), [
          'kind: HTTPSEdge', 'name: web', 'description: "${var.note} $${literal}"', 'hostports: ["${var.domain}:443"]',
          'routes:', '  - name: r', '    match_type: path_prefix', '    match: /', '    circuit_breaker: { error_threshold_percentage: {var: share} }', '',
        ].join('\n'));
        const environment = selectEnvironment(dir, 'one', { cwd: dir });
        const rendered = validateDir({ root: dir, stack: 'prop-one', environment, cwd: dir });
        expect(rendered.problems.filter((p) => p.severity === 'error').map(formatProblem)).toEqual([]);
        const edge = rendered.objects[0];
        expect(edge.body.hostports).toEqual([`${domain}:443`]);
        expect(edge.body.description).toBe(`${note} \${literal}`);
        // Written back as export writes it: plain values, every ${ escaped.
        const back = mkdtempSync(join(tmpdir(), 'ep-envs-prop-'));
        try {
          const doc = { kind: 'HTTPSEdge', name: 'web', ...edge.body, routes: edge.children.map((c) => ({ name: c.name, ...c.body })) };
          writeFileSync(join(back, 'edge.yaml'), stringify(escapeText(doc)));
          const again = validateDir({ root: back, stack: 'prop-one', cwd: back });
          expect(again.problems.filter((p) => p.severity === 'error').map(formatProblem)).toEqual([]);
          expect(again.objects[0].body).toEqual(edge.body);
          expect(again.objects[0].children.map((c) => c.body)).toEqual(edge.children.map((c) => c.body));
        } finally {
          rmSync(back, { recursive: true, force: true });
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }), { numRuns: 60 });
  });
  /**
   * Export for an environment (`--env one --as-variable …`): the rendered desired state written
   * back with the environment's values as `${var.NAME}` / `{var: NAME}` (and the `--as-variable`
   * fields whose variables are new, whole or by a value given, taken into the stack file export
   * writes) reads back to the same desired state, in that environment and, with no environment,
   * from the defaults.
   */
  it('random values written back as variables (--env, --as-variable) read back to the same desired state', () => {
    fc.assert(fc.property(fc.array(label, { minLength: 1, maxLength: 3 }), text, fc.stringMatching(/^[\x20-\x7e]{0,30}$/), fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom('env', 'whole', 'value'), (labels, note, title, share, mode) => {
      const withEnv = mode === 'env';
      const dir = mkdtempSync(join(tmpdir(), 'ep-envs-prop-'));
      const back = mkdtempSync(join(tmpdir(), 'ep-envs-prop-'));
      try {
        const domain = labels.join('.') + '.example.com';
        writeStackFile(dir, { domain, note, share });
        writeFileSync(join(dir, 'edge.yaml'), [
          'kind: HTTPSEdge', 'name: web', 'description: "${var.note} $${literal} ${var.note}$${var.note}"', 'hostports: ["${var.domain}:443", "api.${var.domain}:443"]',
          'routes:', '  - name: r', '    match_type: path_prefix', '    match: /', '    circuit_breaker: { error_threshold_percentage: {var: share} }',
          '    request_headers: { add: { x-title: {var: title} } }', '',
        ].join('\n'));
        // title is the one variable the export makes: given by the manifests here as a literal.
        writeFileSync(join(dir, 'edge.yaml'), readFileSync(join(dir, 'edge.yaml'), 'utf8').replace('{var: title}', () => JSON.stringify(escapeText(title))));
        const environment = selectEnvironment(dir, 'one', { cwd: dir });
        const rendered = validateDir({ root: dir, stack: 'prop-one', environment, cwd: dir });
        expect(rendered.problems.filter((p) => p.severity === 'error').map(formatProblem)).toEqual([]);
        const edge = rendered.objects[0];
        const doc = { kind: 'HTTPSEdge', name: 'web', ...edge.body, routes: edge.children.map((c) => ({ name: c.name, ...c.body })) };
        const asVariables = [mode === 'value' ? `hostports=domain=${domain}` : 'hostports=domain', 'routes.circuit_breaker.error_threshold_percentage=share', 'HTTPSEdge/web.routes.request_headers.add.x-title=title']
          .filter((spec) => withEnv || !spec.startsWith('routes.')).map(parseAsVariable);
        const written = writeBackVariables([doc], withEnv ? { asVariables, values: environment.vars.values, implicit: true } : { asVariables });
        const out = written.docs[0] as { hostports: unknown };
        // The domain always goes back in as a variable: in each hostport (--env, or its value given), or the whole list (a new variable).
        expect(out.hostports).toEqual(mode === 'whole' ? { var: 'domain' } : ['${var.domain}:443', 'api.${var.domain}:443']);
        const made = written.variables.filter((v) => v.isNew).map((v) => v.name);
        expect(made).toEqual(withEnv ? ['title'] : ['domain', 'title']);
        writeFileSync(join(back, 'edgeplane.yaml'), freshStackFile('prop-one', withEnv ? { name: 'one', base: 'prop' } : undefined, written.variables));
        writeFileSync(join(back, 'edge.yaml'), stringify(written.docs[0]));
        const env = selectEnvironment(back, withEnv ? 'one' : undefined, { cwd: back });
        expect(env.stack ?? 'prop-one').toBe('prop-one');
        const again = validateDir({ root: back, stack: 'prop-one', environment: env, cwd: back });
        expect(again.problems.filter((p) => p.severity === 'error').map(formatProblem)).toEqual([]);
        expect(again.objects[0].body).toEqual(edge.body);
        expect(again.objects[0].children.map((c) => c.body)).toEqual(edge.children.map((c) => c.body));
      } finally {
        rmSync(dir, { recursive: true, force: true });
        rmSync(back, { recursive: true, force: true });
      }
    }), { numRuns: 60 });
  });
});
