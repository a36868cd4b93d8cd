import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import jsonpatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { planFromState } from '../helpers/plan-lists.js';
import type { Plan } from '../../src/reconciler/plan/types.js';
import { parsePlan, renderJson } from '../../src/reconciler/render/json.js';
import { expandObserved } from '../helpers/scenario.js';

const ROOT = join(import.meta.dirname, '..', 'scenarios');
const CWD = join(import.meta.dirname, '..', '..');

/** The plan of a scenario folder (test/scenarios), as `scenarios.test.ts` makes it. */
async function scenarioPlan(name: string): Promise<{ plan: Plan; env: Record<string, string> }> {
  const dir = join(ROOT, name);
  const opts = existsSync(join(dir, 'options.json')) ? JSON.parse(readFileSync(join(dir, 'options.json'), 'utf8')) : {};
  const stack = opts.stack ?? 'prod';
  const observed = existsSync(join(dir, 'observed.json')) ? JSON.parse(readFileSync(join(dir, 'observed.json'), 'utf8')) : {};
  const root = relative(CWD, join(dir, 'manifests'));
  const r = (await planFromState({ root, cwd: CWD, stack, env: opts.env ?? {}, adopt: opts.adopt, threshold: opts.threshold }, expandObserved(observed, stack), 'https://api.example.test'));
  return { plan: r.plan!, env: opts.env ?? {} };
}

describe('JSON plan patches', () => {
  it('every step that changes an existing object carries an RFC 6902 patch that turns its `before` into its `after`', async () => {
    let patched = 0;
    for (const name of readdirSync(ROOT).sort()) {
      // Through the saved form: what a program reading `plan --json` or a saved plan gets.
      const plan = parsePlan(renderJson((await scenarioPlan(name)).plan));
      for (const step of plan.steps) {
        const changesExisting = ['update', 'module.put', 'module.delete'].includes(step.action) && !!step.object.id;
        expect(!!step.patch, `${name}: ${step.id}`).toBe(changesExisting);
        if (!step.patch) continue;
        // fast-json-patch refuses to apply a path through `__proto__` or `constructor` (valid header
        // names, planned as they are: test/scenarios/header-named-like-object-properties).
        if (!step.patch.some((op) => /\/(__proto__|constructor|prototype)(\/|$)/.test(op.path))) {
          const { newDocument } = jsonpatch.applyPatch(jsonpatch.deepClone(step.before), step.patch, true, false);
          expect(newDocument, `${name}: ${step.id}`).toEqual(step.after);
        }
        // Only the fields the step writes: the same patch applies to the whole live body. (A module
        // taken off and put back around an auth swap is written back as it was: an empty patch.)
        const fields = Object.keys({ ...step.before, ...step.after });
        expect(fields.length, `${name}: ${step.id}`).toBeGreaterThan(0);
        for (const op of step.patch) expect(fields, `${name}: ${step.id}`).toContain(op.path.split('/')[1]);
        patched++;
      }
    }
    expect(patched).toBeGreaterThan(30);
  });

  it('secrets are masked in patches: a changed secret is a replace with "(sensitive)", its value nowhere in the plan', async () => {
    const { plan, env } = (await scenarioPlan('secret-changed-vs-unchanged'));
    const json = renderJson(plan);
    for (const value of Object.values(env)) expect(json).not.toContain(`"${value}"`);
    const b = plan.steps.find((s) => s.id === 'HTTPSEdge/web/routes/b:update')!;
    expect(b.patch).toContainEqual({ op: 'replace', path: '/webhook_verification/secret', value: '(sensitive)' });
    expect(b.before!.webhook_verification).toMatchObject({ secret: '(sensitive)' });
  });

  it('references read as manifest identities, and a module removed is a remove of its field', async () => {
    // The module rides in the PATCH that records what is applied in the marker (`metadata`).
    const ca = (await scenarioPlan('ca-replaced-with-two-edges')).plan.steps.find((s) => s.id === 'HTTPSEdge/a:update')!;
    expect(ca.patch!.filter((op) => op.path !== '/metadata')).toEqual([{ op: 'replace', path: '/mutual_tls/certificate_authority_ids/0', value: 'CertificateAuthority/clients' }]);
    const swap = (await scenarioPlan('auth-swap-oauth-to-oidc')).plan.steps.find((s) => s.id === 'HTTPSEdge/web/routes/app:module.delete:oauth')!;
    expect(swap.patch).toEqual([{ op: 'remove', path: '/oauth' }]);
    expect(swap.after).toEqual({});
  });
});
