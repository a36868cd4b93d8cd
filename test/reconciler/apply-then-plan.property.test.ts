import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { fetchTransport } from '../../src/client/transport.js';
import { parseSource } from '../../src/reconciler/manifests/load.js';
import { formatProblem } from '../../src/reconciler/manifests/problems.js';
import { validateManifests } from '../../src/reconciler/manifests/validate.js';
import { planDocs } from '../../src/reconciler/pipeline.js';
import type { Plan } from '../../src/reconciler/plan/types.js';
import { readLiveState } from '../../src/reconciler/state/read-state.js';
import { applySequentially } from '../helpers/apply-plan.js';
import { startTestService, type TestService } from '../helpers/service.js';

const CERTS = ['rsa-ca.pem', 'rsa-ca-2.pem', 'ec-ca.pem'].map((f) => readFileSync(join(import.meta.dirname, '..', 'fixtures', 'certs', f), 'utf8'));
const RUNS = Number(process.env.EDGEPLANE_PROPERTY_RUNS ?? 12);

const text = fc.string({ unit: fc.constantFrom('a', 'Z', ' ', 'é', '"', '{', '}', ':', '\\', '日', '🙂', '\n'), maxLength: 40 });
const foreignId = fc.constantFrom('bkdhr', 'bkdtg', 'bkdwd').chain((p) => fc.stringMatching(/^[0-9A-Za-z]{27}$/).map((s) => `${p}_${s}`));

/** A random valid manifest set: CAs (distinct certificates), failover backends forming a DAG. */
const manifests = fc.record({
  cas: fc.subarray([0, 1, 2]).chain((certs) => fc.tuple(...certs.map((c) => fc.record({
    pem: fc.constant(c),
    wrap: fc.boolean(), // the PEM re-wrapped differently from how the service stores it
    description: fc.option(text, { nil: undefined }),
    metadata: fc.option(text, { nil: undefined }),
    protect: fc.boolean(),
  })))),
  fos: fc.array(fc.record({
    description: fc.option(text, { nil: undefined }),
    metadata: fc.option(text, { nil: undefined }),
    children: fc.array(fc.oneof(fc.nat(10), foreignId), { maxLength: 4 }),
  }), { maxLength: 6 }),
});

type Gen = typeof manifests extends fc.Arbitrary<infer T> ? T : never;

function toYaml(g: Gen): string {
  const docs: Record<string, unknown>[] = [];
  g.cas.forEach((c, i) => {
    const pem = c.wrap ? CERTS[c.pem].replace(/\n(?!-----)/g, '\r\n').trimEnd() : CERTS[c.pem];
    docs.push({ kind: 'CertificateAuthority', name: `ca-${i}`, ca_pem: pem, ...(c.description !== undefined ? { description: c.description } : {}), ...(c.metadata !== undefined ? { metadata: c.metadata } : {}), ...(c.protect ? { protect: true } : {}) });
  });
  g.fos.forEach((f, i) => {
    // Only earlier backends may be children: no cycles; duplicates dropped (uniqueItems).
    const children = [...new Set(f.children.map((c) => (typeof c === 'number' ? (i > 0 ? `fo-${c % i}` : null) : c)).filter((c): c is string => !!c))];
    docs.push({ kind: 'FailoverBackend', name: `fo-${i}`, backends: children, ...(f.description !== undefined ? { description: f.description } : {}), ...(f.metadata !== undefined ? { metadata: f.metadata } : {}) });
  });
  return docs.map((d) => stringify(d)).join('---\n');
}

let svc: TestService;
beforeAll(async () => { svc = await startTestService('pglite'); });
afterAll(async () => { await svc?.close(); });

async function planFor(client: ApiClient, yamlText: string): Promise<Plan> {
  const parsed = parseSource('gen.yaml', yamlText);
  const v = validateManifests(parsed.docs, { stack: 'prop' });
  const problems = [...parsed.problems, ...v.problems].filter((p) => p.severity === 'error');
  expect(problems.map(formatProblem)).toEqual([]);
  const r = planDocs(v, { stack: 'prop', env: {}, cwd: process.cwd() }, await readLiveState(client), client.target);
  expect(r.plan, JSON.stringify(r.problems)).toBeDefined();
  return r.plan!;
}

describe('apply then plan is empty (real service, PGlite)', () => {
  it('for random valid manifests, and for a random second version applied over the first', async () => {
    await fc.assert(fc.asyncProperty(manifests, manifests, async (first, second) => {
      const account = await svc.account();
      const client = new ApiClient(fetchTransport(svc.url, account.apiKey!));
      for (const g of [first, second]) {
        const y = toYaml(g);
        const plan = await planFor(client, y);
        expect(plan.conflicts).toEqual([]);
        await applySequentially(client, plan);
        const again = await planFor(client, y);
        expect(again.steps.map((s) => `${s.id} ${JSON.stringify(s.changes)}`)).toEqual([]);
      }
    }), { numRuns: RUNS });
  });
});
