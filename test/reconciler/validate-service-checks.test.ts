import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/client/api-client.js';
import { applyPlan } from '../../src/reconciler/apply/execute.js';
import { secretsFromMap } from '../../src/reconciler/apply/materialize.js';
import { loadManifests } from '../../src/reconciler/manifests/load.js';
import type { ManifestObject } from '../../src/reconciler/manifests/model.js';
import { formatPath, hasErrors, type Problem } from '../../src/reconciler/manifests/problems.js';
import { resolveSecrets } from '../../src/reconciler/manifests/secrets.js';
import { validateManifests } from '../../src/reconciler/manifests/validate.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';
import { buildDesired } from '../../src/reconciler/plan/desired.js';
import { diff } from '../../src/reconciler/plan/diff.js';
import { observeLists } from '../../src/reconciler/plan/observed.js';
import { readLiveState } from '../../src/reconciler/state/read-state.js';
import { cleanupDirs, clientFor, manifestDir } from '../helpers/reconcile.js';
import { startTestService, type TestService } from '../helpers/service.js';

const CWD = join(import.meta.dirname, '..', '..');
/** One negative manifest per family of checks; validate.test.ts holds its expected problems. */
const FIXTURE = relative(CWD, join(CWD, 'test', 'fixtures', 'manifests', 'invalid', 'service-checks'));
const STACK = 'prod';
const ENV = { OAUTH_SECRET: 'oauth-secret', OIDC_SECRET: 'oidc-secret', WEBHOOK_SECRET: 'whsec' };
const instant = { sleep: async () => {}, random: () => 0.5 };

let svc: TestService;
beforeAll(async () => { svc = await startTestService('pglite'); });
afterAll(async () => { await svc?.close(); cleanupDirs(); });

/**
 * Applies manifests as `apply` would send them but without validating them first (into a fresh
 * account): what the service refuses, as `<identity> → its message`, and the identities of the
 * objects the manifests hold.
 */
async function applyUnvalidated(client: ApiClient, root: string): Promise<{ refused: Map<string, string>; skipped: string[] }> {
  const { objects } = validateManifests(loadManifests(root, CWD).docs, { stack: STACK });
  const secrets = resolveSecrets(objects, STACK, { env: ENV, cwd: CWD });
  expect(secrets.problems).toEqual([]);
  const plan = diff(buildDesired(objects, secrets.secrets), observeLists(await readLiveState(client), STACK), { stack: STACK, target: 'test' });
  const refused = new Map<string, string>();
  const r = await applyPlan(plan, {
    client, secrets: secretsFromMap(secrets.secrets), parallelism: 4, retry: instant,
    onEvent: (e) => {
      if (e.type !== 'failed') return;
      const msg = /→ 400 ERR_[A-Z_]+: ([\s\S]*) \(operation op_\w+\)$/.exec(e.error);
      refused.set(e.node.object.identity, msg ? msg[1] : e.error);
    },
  });
  return { refused, skipped: r.skipped.map((s) => s.id) };
}

/** Each object's own `service-check` problems, with paths relative to the object. */
function problemsByObject(root: string): Map<string, { object: ManifestObject; problems: (Problem & { rel: string })[] }> {
  const out = new Map<string, { object: ManifestObject; problems: (Problem & { rel: string })[] }>();
  for (const doc of loadManifests(root, CWD).docs) {
    const { objects, problems } = validateManifests([doc], { stack: STACK });
    const all = objects.flatMap((o) => [o, ...o.children]);
    for (const o of all) out.set(o.identity, { object: o, problems: [] });
    for (const p of problems.filter((x) => x.rule === 'service-check')) {
      // The deepest object whose path holds the problem's.
      const owner = all.map((o) => ({ o, prefix: formatPath(o.at) }))
        .filter(({ prefix }) => !prefix || p.path.startsWith(prefix + '.'))
        .sort((a, b) => b.prefix.length - a.prefix.length)[0];
      out.get(owner.o.identity)!.problems.push({ ...p, rel: owner.prefix ? p.path.slice(owner.prefix.length + 1) : p.path });
    }
  }
  return out;
}

describe("validate reports the service's checks, worded as the service refuses them", () => {
  it('every object the fixture marks bad is refused with the message of one of its problems, and only those', async () => {
    const expected = problemsByObject(FIXTURE);
    const { refused, skipped } = await applyUnvalidated(await clientFor(svc), FIXTURE);
    expect(skipped).toEqual([]);
    let bad = 0;
    for (const [identity, { problems }] of expected) {
      const msg = refused.get(identity);
      if (!problems.length) {
        expect(msg, `${identity} passes validate but the service refused it`).toBeUndefined();
        continue;
      }
      bad++;
      expect(msg, `${identity}: validate found ${problems.map((p) => p.message).join('; ')} but the service accepted it`).toBeDefined();
      // The service names the field (or the map holding the key the problem points at) before the rule.
      const same = problems.filter((p) => msg!.endsWith(`: ${p.message}`) && p.rel.startsWith(msg!.slice(0, -p.message.length - 2)));
      expect(same, `${identity}: the service said ${JSON.stringify(msg)}; validate said ${JSON.stringify(problems.map((p) => `${p.rel}: ${p.message}`))}`).not.toEqual([]);
    }
    // One per family at least: CAs, hostports, oauth, oidc, webhook verification, SAML, headers.
    expect(bad).toBeGreaterThanOrEqual(7);
    expect([...refused.keys()].filter((id) => !expected.has(id))).toEqual([]);
  });

  it('leaves a secret the manifest leaves out to the service: refused on create, the stored one kept on update', async () => {
    const edge = (o: { host: string; secrets: boolean; enabled?: boolean }) => {
      const secret = (indent: string, field: string, env: string) => (o.secrets ? `\n${indent}${field}: { env: ${env} }` : '');
      const enabled = o.enabled === false ? 'enabled: false\n      ' : '';
      return `kind: HTTPSEdge
name: left-out
hostports: [${o.host}.checks.example.com:443]
routes:
  - name: oidc
    match_type: path_prefix
    match: /oidc
    oidc:
      ${enabled}issuer: https://accounts.example.com
      client_id: web${secret('      ', 'client_secret', 'OIDC_SECRET')}
  - name: webhook
    match_type: path_prefix
    match: /webhook
    webhook_verification:
      ${enabled}provider: github${secret('      ', 'secret', 'WEBHOOK_SECRET')}
  - name: oauth
    match_type: path_prefix
    match: /oauth
    oauth:
      ${enabled}provider:
        github:
          client_id: gh
          scopes: [read:org]${secret('          ', 'client_secret', 'OAUTH_SECRET')}
`;
    };
    const without = manifestDir({ 'edge.yaml': edge({ host: 'created', secrets: false }) });
    expect(validateDir({ root: without, cwd: CWD, stack: STACK }).problems).toEqual([]);
    // Created without them: the service has no secret to keep and refuses.
    const { refused } = await applyUnvalidated(await clientFor(svc), without);
    expect(Object.fromEntries(refused)).toEqual({
      'HTTPSEdge/left-out/routes/oidc': 'oidc.client_secret: is required',
      'HTTPSEdge/left-out/routes/webhook': 'webhook_verification.secret: is required for provider github',
      'HTTPSEdge/left-out/routes/oauth': 'oauth.provider.github.client_secret: is required with client_id',
    });
    // Created with them, then changed without them: accepted, the stored secrets are kept.
    const client = await clientFor(svc);
    expect(Object.fromEntries((await applyUnvalidated(client, manifestDir({ 'edge.yaml': edge({ host: 'updated', secrets: true }) }))).refused)).toEqual({});
    const changed = manifestDir({ 'edge.yaml': edge({ host: 'updated', secrets: false, enabled: false }) });
    expect(validateDir({ root: changed, cwd: CWD, stack: STACK }).problems).toEqual([]);
    expect(Object.fromEntries((await applyUnvalidated(client, changed)).refused)).toEqual({});
    const [live] = (await readLiveState(client)).https_edges as { routes: Record<string, { enabled: boolean }>[] }[];
    expect(live.routes.map((r) => [r.oidc, r.webhook_verification, r.oauth].find(Boolean)!.enabled)).toEqual([false, false, false]);
  });
});
