import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport, type Transport } from '../../src/client/transport.js';
import { applyPlan } from '../../src/reconciler/apply/execute.js';
import { isSecretPath, planSecrets, secretsFromMap, secretsFromSources, StaleSecretError } from '../../src/reconciler/apply/materialize.js';
import { findKind } from '../../src/kinds/registry.js';
import { staleReasons } from '../../src/reconciler/apply/stale.js';
import { exportState } from '../../src/reconciler/export/export.js';
import { readLiveState } from '../../src/reconciler/state/read-state.js';
import { startWatchSession, type WatchReport } from '../../src/reconciler/watch/session.js';
import {
  applyDir, cleanupDirs, clientFor, copyExample, duplicates, EXAMPLE_ENV, liveObjects, manifestDir, prepare, remaining, tempDir,
} from '../helpers/reconcile.js';
import { startTestService, type TestService } from '../helpers/service.js';

const CERT2 = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'certs', 'rsa-ca.pem'), 'utf8');
const instant = { sleep: async () => {}, random: () => 0.5 };

let svc: TestService;
beforeAll(async () => { svc = await startTestService('pglite'); });
afterAll(async () => { await svc?.close(); cleanupDirs(); });

/** Writes exported files into a fresh directory; returns it and the env its secret references need. */
async function exportTo(client: Awaited<ReturnType<typeof clientFor>>, stack: string, values: Record<string, string>, all = false) {
  const r = exportState(await readLiveState(client), { stack, all });
  const dir = manifestDir(Object.fromEntries(r.files.map((f) => [f.name, f.text])));
  const env: Record<string, string> = {};
  for (const s of r.secrets) env[s.env] = values[`${s.identity}#${s.path}`];
  return { dir, env, result: r };
}

const FULL_SECRETS = {
  'HTTPSEdge/shop/routes/stripe-webhooks#webhook_verification.secret': EXAMPLE_ENV.SHOP_STRIPE_WEBHOOK_SECRET,
  'HTTPSEdge/shop/routes/admin#oauth.provider.github.client_secret': EXAMPLE_ENV.SHOP_GITHUB_CLIENT_SECRET,
  'HTTPSEdge/shop/routes/partners#oidc.client_secret': EXAMPLE_ENV.SHOP_OIDC_CLIENT_SECRET,
};

describe('apply (real executor, real service)', () => {
  it('applies the full example in parallel; plan is then empty; export then plan is empty too', async () => {
    const client = await clientFor(svc);
    const dir = copyExample('full');
    const r = await applyDir(client, dir, 'full', EXAMPLE_ENV, { parallelism: 8 });
    expect(r.failed).toEqual([]);
    expect(Object.keys(r.created)).toHaveLength(12);
    expect(await remaining(client, dir, 'full', EXAMPLE_ENV)).toEqual([]);
    const exp = await exportTo(client, 'full', FULL_SECRETS);
    expect(exp.result.warnings).toEqual([]);
    expect(exp.result.secrets).toHaveLength(3);
    const text = exp.result.files.map((f) => f.text).join('\n');
    expect(text).not.toMatch(/whsec_test|gh-secret|oidc-secret|managed_by|edgeplane_|subject_common_name|terminate_at|entity_id/);
    expect(text).toMatch(/backend_id: primary/);
    expect(text).toMatch(/- partners-rsa/);
    expect(await remaining(client, exp.dir, 'full', exp.env)).toEqual([]);
  });

  it('converges after every edit: fields, module removal, auth swap, CA replace, route removal', async () => {
    const client = await clientFor(svc);
    const dir = copyExample('full');
    await applyDir(client, dir, 'edits', EXAMPLE_ENV);
    const edge = join(dir, 'https-edge.yaml');
    const cas = join(dir, 'certificate-authorities.yaml');
    const edits: [string, (s: string) => string][] = [
      [edge, (s) => s.replace('description: Storefront, admin and webhooks', 'description: Storefront v2')],
      [edge, (s) => s.replace('    compression: {}\n', '')],
      // oauth → oidc on the admin route: the planner takes the backend off, swaps, puts it back.
      [edge, (s) => s.replace(/    oauth:\n      provider:\n        github:\n(?:          .*\n)+/, '    oidc:\n      issuer: https://login.example.com\n      client_id: admins\n      client_secret: { env: SHOP_OIDC_CLIENT_SECRET }\n')],
      [cas, (s) => s.replace(/(name: partners-rsa\n[\s\S]*?ca_pem: \|\n)(?:  .*\n)+/, (_m, head: string) => head + CERT2.replace(/^/gm, '  ').replace(/\n {2}$/, '\n'))],
      [edge, (s) => s.replace(/  - name: live\n(?:    .*\n)+/, '')],
    ];
    for (const [file, edit] of edits) {
      const before = readFileSync(file, 'utf8');
      const after = edit(before);
      expect(after, 'the edit applies').not.toBe(before);
      writeFileSync(file, after);
      await applyDir(client, dir, 'edits', EXAMPLE_ENV);
      expect(await remaining(client, dir, 'edits', EXAMPLE_ENV)).toEqual([]);
    }
    expect(duplicates(await liveObjects(client))).toEqual([]);
  });

  it('renames an edge and a route with secrets (renamed_from): same objects, only markers written, no secret sent; then no changes', async () => {
    const client = await clientFor(svc);
    const dir = copyExample('full');
    await applyDir(client, dir, 'renames', EXAMPLE_ENV);
    const before = new Map((await liveObjects(client)).map((o) => [o.id, o.identity]));
    const edge = join(dir, 'https-edge.yaml');
    writeFileSync(edge, readFileSync(edge, 'utf8').replace(/^name: shop$/m, 'name: store\nrenamed_from: shop').replace(/^  - name: admin$/m, '  - name: backoffice\n    renamed_from: admin'));
    const { plan } = await prepare(client, dir, 'renames', EXAMPLE_ENV);
    expect(plan!.steps.length).toBeGreaterThan(0);
    for (const step of plan!.steps) {
      expect(step.action, step.id).toBe('update');
      expect(Object.keys(step.request.body as object), step.id).toEqual(['metadata']);
      expect(step.changes.some((c) => c.sensitive), step.id).toBe(false);
    }
    expect(plan!.blocked).toEqual([]);
    await applyDir(client, dir, 'renames', EXAMPLE_ENV);
    expect(await remaining(client, dir, 'renames', EXAMPLE_ENV)).toEqual([]);
    const after = await liveObjects(client);
    expect(after.map((o) => o.id).sort()).toEqual([...before.keys()].sort());
    const adminId = [...before].find(([, identity]) => identity === 'renames:HTTPSEdge/shop/routes/admin')?.[0];
    expect(adminId).toBeDefined();
    expect(after.find((o) => o.identity === 'renames:HTTPSEdge/store/routes/backoffice')?.id).toBe(adminId);
  });

  it('a step the API refuses fails, its dependents are skipped, the rest is done; fixing the file converges', async () => {
    const client = await clientFor(svc);
    // A webhook secret left out passes validate (on update the stored one would be kept) and is refused on create.
    const dir = manifestDir({
      'all.yaml': [
        'kind: FailoverBackend\nname: pool\nbackends: []\n',
        `kind: HTTPSEdge\nname: web\nhostports: ["fail-${Date.now()}.example.com:443"]\nroutes:\n  - name: hooks\n    match_type: path_prefix\n    match: /hooks/\n    webhook_verification: { provider: github }\n    backend: { backend_id: pool }\n  - name: ok\n    match_type: path_prefix\n    match: /\n    backend: { backend_id: pool }\n`,
      ].join('---\n'),
    });
    const p = await prepare(client, dir, 'fail');
    const r = await applyPlan(p.plan!, { client, secrets: { value: () => '' }, retry: instant });
    expect(r.failed.map((f) => f.id)).toEqual(['HTTPSEdge/web/routes/hooks:create']);
    expect(r.failed[0].error).toMatch(/400.*webhook_verification\.secret: is required/);
    expect(r.skipped).toEqual([{ id: 'HTTPSEdge/web/routes/hooks:module.put:backend', because: 'HTTPSEdge/web/routes/hooks:create' }]);
    expect(r.done).toContain('HTTPSEdge/web/routes/ok:create');
    writeFileSync(join(dir, 'all.yaml'), readFileSync(join(dir, 'all.yaml'), 'utf8').replace('    webhook_verification: { provider: github }\n', ''));
    await applyDir(client, dir, 'fail');
    expect(await remaining(client, dir, 'fail')).toEqual([]);
  });

  it('property: lost responses, refused connections, 503 and 429 on writes never leave duplicates; apply converges', async () => {
    const faults = fc.array(fc.constantFrom('ok', 'ok', 'ok', 'lost', 'refused', '503', '429'), { minLength: 30, maxLength: 30 });
    await fc.assert(fc.asyncProperty(faults, async (script) => {
      let i = 0;
      const flaky = (t: Transport): Transport => ({
        target: t.target,
        close: () => t.close(),
        async request(method, path, body, headers) {
          if (method === 'GET') return t.request(method, path, body, headers);
          const f = script[i++ % script.length];
          if (f === 'refused') throw new Error('connect ECONNREFUSED');
          if (f === '503') return { status: 503, headers: {}, body: { msg: 'unavailable' } };
          if (f === '429') return { status: 429, headers: { 'retry-after': '0' }, body: {} };
          const res = await t.request(method, path, body, headers);
          if (f === 'lost') throw new Error('socket hang up');
          return res;
        },
      });
      const account = await svc.account();
      const faulty = new ApiClient(flaky(httpTransport(svc.url, account.apiKey!)));
      const client = new ApiClient(httpTransport(svc.url, account.apiKey!));
      const dir = copyExample('small');
      // Through the faults: it succeeds, or runs out of attempts on some step (a failed step).
      const p = await prepare(faulty, dir, 'faults');
      const first = await applyPlan(p.plan!, { client: faulty, secrets: { value: () => '' }, retry: { ...instant, attempts: 4 } });
      expect(first.failed.every((f) => /→ (429|503)|ECONNREFUSED|socket hang up/.test(f.error)), JSON.stringify(first.failed)).toBe(true);
      expect(duplicates(await liveObjects(client))).toEqual([]);
      // Whatever happened, the next apply converges.
      await applyDir(client, dir, 'faults');
      expect(await remaining(client, dir, 'faults')).toEqual([]);
      const live = await liveObjects(client);
      expect(duplicates(live)).toEqual([]);
      expect(live.filter((o) => o.identity === 'unmanaged')).toEqual([]);
      expect(live).toHaveLength(5);
    }), { numRuns: Number(process.env.EDGEPLANE_PROPERTY_RUNS ?? 6), endOnFailure: true });
  });
});

describe('export --all and adoption', () => {
  it('exports unmanaged objects; plan --adopt then only stamps markers', async () => {
    const client = await clientFor(svc);
    const host = `adopt-${Date.now()}.example.com:443`;
    const ca = (await client.send('POST', '/certificate_authorities', { ca_pem: CERT2, description: 'hand made' })) as { id: string };
    const edge = (await client.send('POST', '/edges/https', {
      hostports: [host], description: 'by hand', metadata: 'team=web', mutual_tls: { certificate_authority_ids: [ca.id] },
      tls_termination: { min_version: '1.3' },
    })) as { id: string };
    // Failover backends have no identifying field: they are adopted by content, the one they
    // contain first (its id is what the other's content holds), and a twin pair is reported.
    const http = 'bkdhr_' + 'a'.repeat(27);
    const leaf = (await client.send('POST', '/backends/failover', { backends: [http], description: 'leaf pool' })) as { id: string };
    const outer = (await client.send('POST', '/backends/failover', { backends: [leaf.id], description: 'outer pool', metadata: 'team=web' })) as { id: string };
    await client.send('POST', `/edges/https/${edge.id}/routes`, { match_type: 'path_prefix', match: '/api/', compression: { enabled: true }, backend: { backend_id: outer.id } });

    const owned = exportState(await readLiveState(client), { stack: 'adopt' });
    expect(owned.files).toEqual([]);
    const exp = await exportTo(client, 'adopt', {}, true);
    const text = exp.result.files.map((f) => f.text).join('\n');
    expect(text).toContain(`name: ${host.replace(':', '-')}`);
    expect(text).toMatch(/certificate_authority_ids:\n\s+- hand-made/);
    expect(text).toContain('metadata: team=web');
    expect(text).toContain('name: api');

    expect(text).toMatch(/name: outer-pool\n(?:.*\n)*?backends:\n\s+- leaf-pool/);
    const p = (await prepare(client, exp.dir, 'adopt', {}, { adopt: true })).plan!;
    expect(p.conflicts).toEqual([]);
    expect(p.steps.map((s) => s.action)).toEqual(['update', 'update', 'update', 'update', 'update']);
    for (const s of p.steps) {
      expect(Object.keys(s.request.body as object)).toEqual(['metadata']);
      expect(s.changes.map((c) => c.path)).toEqual(['metadata (ownership marker)']);
    }
    await applyPlan(p, { client, secrets: { value: () => '' } });
    expect(await remaining(client, exp.dir, 'adopt')).toEqual([]);
    expect((await liveObjects(client)).map((o) => o.identity).sort()).toEqual([
      'adopt:CertificateAuthority/hand-made', 'adopt:FailoverBackend/leaf-pool', 'adopt:FailoverBackend/outer-pool',
      `adopt:HTTPSEdge/${host.replace(':', '-')}`, `adopt:HTTPSEdge/${host.replace(':', '-')}/routes/api`,
    ]);

    // Two unmanaged twins: adopting either would be a guess.
    await client.send('POST', '/backends/failover', { backends: [http], description: 'twin' });
    await client.send('POST', '/backends/failover', { backends: [http], description: 'twin' });
    const twins = manifestDir({ 'twin.yaml': `kind: FailoverBackend\nname: twin\ndescription: twin\nbackends: ["${http}"]\n` });
    const t = (await prepare(client, twins, 'twins', {}, { adopt: true })).plan!;
    expect(t.steps).toEqual([]);
    expect(t.conflicts.map((c) => c.message)).toEqual([expect.stringMatching(/same as 2 unmanaged failover backends .*only one can be adopted/)]);
    // Without --adopt, an object like an unmanaged one is simply created.
    expect((await prepare(client, twins, 'twins')).plan!.steps.map((s) => s.id)).toEqual(['FailoverBackend/twin:create']);
  });

  it('gives secrets that read alike variables of their own, and writes no secret where the service takes none', async () => {
    const client = await clientFor(svc);
    const edge = (await client.send('POST', '/edges/https', { hostports: [`env-${Date.now()}.example.com:443`] })) as { id: string };
    const route = (match: string, body: object) => client.send('POST', `/edges/https/${edge.id}/routes`, { match_type: 'exact_path', match, ...body });
    await route('/a.b', { webhook_verification: { provider: 'github', secret: 'secret-one' } });
    await route('/a-b', { webhook_verification: { provider: 'github', secret: 'secret-two' } });
    await route('/sns', { webhook_verification: { provider: 'sns' } });
    await route('/google', { oauth: { provider: { google: { email_domains: ['example.com'] } } } });
    await route('/github', { oauth: { provider: { github: { client_id: 'gh-id', client_secret: 'gh-secret' } } } });
    const exp = await exportTo(client, 'envs', {}, true);
    const byPath = new Map(exp.result.secrets.map((x) => [`${x.identity.split('/').pop()}#${x.path}`, x.env]));
    // Only the three secrets the service can hold, each in a variable of its own.
    expect([...byPath.keys()].sort()).toEqual(['a-b#webhook_verification.secret', 'a.b#webhook_verification.secret', 'github#oauth.provider.github.client_secret']);
    expect(new Set(byPath.values()).size).toBe(3);
    const text = exp.result.files.map((f) => f.text).join('\n');
    for (const env of byPath.values()) expect(text.split(`env: ${env}\n`).length - 1).toBe(1);
    // The export validates as written; adopted with each variable set, each route keeps its own secret.
    const env = { [byPath.get('a.b#webhook_verification.secret')!]: 'secret-one', [byPath.get('a-b#webhook_verification.secret')!]: 'secret-two', [byPath.get('github#oauth.provider.github.client_secret')!]: 'gh-secret' };
    const p = await prepare(client, exp.dir, 'envs', env, { adopt: true });
    expect(p.problems.filter((x) => x.severity === 'error')).toEqual([]);
    const sent = [...p.secrets.entries()].map(([k, v]) => [k.replace(/^.*\/routes\//, ''), v.fingerprint.length > 0]);
    expect(sent.sort()).toEqual([['a-b#webhook_verification.secret', true], ['a.b#webhook_verification.secret', true], ['github#oauth.provider.github.client_secret', true]]);
    await applyPlan(p.plan!, { client, secrets: secretsFromMap(p.secrets) });
    expect(await remaining(client, exp.dir, 'envs', env)).toEqual([]);
    // Swapping the two values is a change of both: they are not one variable.
    const swapped = { ...env, [byPath.get('a.b#webhook_verification.secret')!]: 'secret-two', [byPath.get('a-b#webhook_verification.secret')!]: 'secret-one' };
    expect((await remaining(client, exp.dir, 'envs', swapped)).map((x) => x.split(' ')[0]).sort()).toEqual([
      expect.stringMatching(/routes\/a-b:update$/), expect.stringMatching(/routes\/a\.b:update$/),
    ]);
  });

  it('exports the copy of a duplicated object that plan keeps, and the edge of a stack\'s routes whose marker was cleared', async () => {
    const client = await clientFor(svc);
    const dir = manifestDir({
      'all.yaml': `kind: FailoverBackend\nname: fb\nbackends: ["bkdhr_${'b'.repeat(27)}"]\n---\nkind: HTTPSEdge\nname: web\nhostports: ["dup-${Date.now()}.example.com:443"]\nroutes:\n  - name: root\n    match_type: path_prefix\n    match: /\n`,
    });
    await applyDir(client, dir, 'dups');
    // A second object carrying the failover backend's identity, as two applies at once leave one.
    const [first] = (await readLiveState(client)).backends as { id: string; metadata: string; backends: string[] }[];
    const second = (await client.send('POST', '/backends/failover', { backends: first.backends, metadata: first.metadata })) as { id: string };
    const withDup = exportState(await readLiveState(client), { stack: 'dups' });
    expect(withDup.warnings).toEqual([expect.stringMatching(/^FailoverBackend\/fb: 2 live objects of stack "dups" carry this identity; exported bkdfo_\w+, the one plan keeps/)]);
    const kept = /exported (bkdfo_\w+)/.exec(withDup.warnings[0])![1];
    const other = kept === first.id ? second.id : first.id;
    expect(withDup.files.find((f) => f.name === 'failover-backend.yaml')!.objects).toBe(1);
    const exported = manifestDir(Object.fromEntries(withDup.files.map((f) => [f.name, f.text])));
    // The plan of the export deletes the other copy and creates nothing.
    expect((await prepare(client, exported, 'dups')).plan!.steps.map((x) => `${x.action} ${x.object.id ?? x.object.identity}`)).toEqual([`delete ${other}`]);
    await client.send('DELETE', `/backends/failover/${other}`);

    // The edge loses its marker (metadata cleared by hand); its route is still the stack's.
    const edge = ((await readLiveState(client)).https_edges as { id: string }[])[0];
    await client.send('PATCH', `/edges/https/${edge.id}`, { metadata: '' });
    const unmarked = exportState(await readLiveState(client), { stack: 'dups' });
    expect(unmarked.warnings).toEqual([expect.stringContaining(`HTTPS edge ${edge.id} holds objects of stack "dups" but no stack manages it`)]);
    expect(unmarked.files.map((f) => [f.name, f.objects])).toEqual([['failover-backend.yaml', 1], ['https-edge.yaml', 2]]);
    const again = manifestDir(Object.fromEntries(unmarked.files.map((f) => [f.name, f.text])));
    const adopt = (await prepare(client, again, 'dups', {}, { adopt: true })).plan!;
    expect(adopt.steps.map((x) => `${x.action} ${x.object.identity}`)).toEqual(['update HTTPSEdge/web']);
    expect(adopt.steps[0].changes.map((c) => c.path)).toEqual(['metadata (ownership marker)']);
    // With --all the edge is exported anyway (no stack manages it): still under the name its
    // route's marker gives it, beside an unmanaged route of its own, so adopting keeps the route.
    await client.send('POST', `/edges/https/${edge.id}/routes`, { match_type: 'path_prefix', match: '/zz-unmanaged' });
    const all = exportState(await readLiveState(client), { stack: 'dups', all: true });
    expect(all.warnings).toEqual([expect.stringContaining(`HTTPS edge ${edge.id} holds objects of stack "dups" but no stack manages it`)]);
    const allDir = manifestDir(Object.fromEntries(all.files.map((f) => [f.name, f.text])));
    const adoptAll = (await prepare(client, allDir, 'dups', {}, { adopt: true })).plan!;
    expect(adoptAll.steps.filter((x) => x.action !== 'update').map((x) => `${x.action} ${x.object.identity}`)).toEqual([]);
    expect(adoptAll.steps.map((x) => x.object.identity)).toContain('HTTPSEdge/web');
  });
});

describe('metadata alone', () => {
  it('is planned, though each object reads the same as its manifest while the pages arrive: the user\'s metadata, protection, and a marker edited out of band', async () => {
    const client = await clientFor(svc);
    const host = `meta-${Date.now()}.example.com:443`;
    const files = (extra: { pool?: string; web?: string; route?: string }) => ({
      'all.yaml': `kind: FailoverBackend\nname: pool\nbackends: []\n${extra.pool ?? ''}---\n` +
        `kind: HTTPSEdge\nname: web\nhostports: ["${host}"]\n${extra.web ?? ''}routes:\n  - name: root\n    match_type: path_prefix\n    match: /\n    backend: { backend_id: pool }\n${extra.route ?? ''}`,
    });
    const dir = manifestDir(files({}));
    await applyDir(client, dir, 'meta');
    expect(await remaining(client, dir, 'meta')).toEqual([]);
    manifestDir(files({ pool: 'metadata: team-a\n', web: 'protect: true\n', route: '    metadata: "{\\"owner\\": \\"ops\\"}"\n' }), dir);
    const steps = (await prepare(client, dir, 'meta')).plan!.steps;
    expect(steps.map((x) => `${x.id} ${x.changes.map((c) => c.path).join(',')}`).sort()).toEqual([
      'FailoverBackend/pool:update metadata',
      'HTTPSEdge/web/routes/root:update metadata',
      'HTTPSEdge/web:update metadata (ownership marker)',
    ]);
    await applyDir(client, dir, 'meta');
    expect(await remaining(client, dir, 'meta')).toEqual([]);
    // A marker changed out of band (here: protection taken off) is put back.
    const web = ((await readLiveState(client)).https_edges as { id: string; metadata: string }[]).find((e) => e.metadata.includes('"protect":true'))!;
    await client.send('PATCH', `/edges/https/${web.id}`, { metadata: web.metadata.replace(',"protect":true', '') });
    expect((await prepare(client, dir, 'meta')).plan!.steps.map((x) => `${x.id} ${x.changes.map((c) => c.path).join(',')}`)).toEqual(['HTTPSEdge/web:update metadata (ownership marker)']);
  });
});

describe('export --all of an account with an edge that lost its marker', () => {
  it('names that edge from its routes\' markers before any other edge takes the name', async () => {
    const client = await clientFor(svc);
    // Made first (its id sorts first), unmanaged, and named `web` from its description.
    const other = (await client.send('POST', '/edges/https', { description: 'web' })) as { id: string };
    const dir = manifestDir({ 'all.yaml': `kind: HTTPSEdge\nname: web\nhostports: ["hint-${Date.now()}.example.com:443"]\nroutes:\n  - name: root\n    match_type: path_prefix\n    match: /\n` });
    await applyDir(client, dir, 'hint');
    const edge = ((await readLiveState(client)).https_edges as { id: string }[]).find((e) => e.id !== other.id)!;
    await client.send('PATCH', `/edges/https/${edge.id}`, { metadata: '' });
    const all = exportState(await readLiveState(client), { stack: 'hint', all: true });
    const exported = manifestDir(Object.fromEntries(all.files.map((f) => [f.name, f.text])));
    const adopt = (await prepare(client, exported, 'hint', {}, { adopt: true })).plan!;
    expect(adopt.steps.filter((x) => x.action !== 'update').map((x) => `${x.action} ${x.object.identity}`)).toEqual([]);
    expect(adopt.steps.find((x) => x.object.identity === 'HTTPSEdge/web')?.object.id).toBe(edge.id);
  });
});

describe('saved plans', () => {
  it('are stale when an object they touch changed, or one they create now exists', async () => {
    const client = await clientFor(svc);
    const dir = copyExample('small');
    await applyDir(client, dir, 'saved');
    writeFileSync(join(dir, 'https-edge.yaml'), readFileSync(join(dir, 'https-edge.yaml'), 'utf8').replace('Public site and partner API', 'Changed'));
    const p = (await prepare(client, dir, 'saved')).plan!;
    expect(staleReasons(p, await readLiveState(client))).toEqual([]);
    const edgeId = p.steps[0].object.id!;
    await client.send('PATCH', `/edges/https/${edgeId}`, { description: 'changed out of band' });
    expect(staleReasons(p, await readLiveState(client))).toEqual([`HTTPSEdge/web (${edgeId}) changed since the plan was made`]);

    writeFileSync(join(dir, 'extra.yaml'), 'kind: FailoverBackend\nname: extra\nbackends: []\n');
    const p2 = (await prepare(client, dir, 'saved')).plan!;
    await applyDir(client, dir, 'saved');
    expect(staleReasons(p2, await readLiveState(client)).join('\n')).toMatch(/FailoverBackend\/extra already exists/);
  });

  it('read secrets from their source and refuse a value that is not the planned one', async () => {
    const client = await clientFor(svc);
    const dir = copyExample('full');
    const p = (await prepare(client, dir, 'sec', EXAMPLE_ENV)).plan!;
    const found = planSecrets(p.steps);
    expect(found.map((s) => `${s.step.object.identity}#${s.path}`).sort()).toEqual(Object.keys(FULL_SECRETS).sort());
    // The service made every fingerprint (under its own key), and is asked again for the values read now.
    for (const s of found) expect(s.token.fingerprint).toMatch(/^k:[A-Za-z0-9_-]{22}$/);
    const tokens = found.map((s) => ({ identity: s.step.object.identity, path: s.path, token: s.token }));
    const fp = (stack: string, asks: { identity: string; path: string; value: string }[]) => client.fingerprintSecrets(stack, asks);
    const ok = await secretsFromSources({ stack: 'sec', env: EXAMPLE_ENV, readFile: () => undefined }, tokens, fp);
    for (const s of found) expect(ok.value(s.step.object.identity, s.path, s.token)).toBe(FULL_SECRETS[`${s.step.object.identity}#${s.path}` as keyof typeof FULL_SECRETS]);
    const changed = await secretsFromSources({ stack: 'sec', env: { ...EXAMPLE_ENV, SHOP_OIDC_CLIENT_SECRET: 'rotated' }, readFile: () => undefined }, tokens, fp);
    const oidc = found.find((s) => s.path === 'oidc.client_secret')!;
    expect(() => changed.value(oidc.step.object.identity, oidc.path, oidc.token)).toThrow(StaleSecretError);
    const unset = await secretsFromSources({ stack: 'sec', env: {}, readFile: () => undefined }, tokens, fp);
    expect(() => unset.value(oidc.step.object.identity, oidc.path, oidc.token)).toThrow(/SHOP_OIDC_CLIENT_SECRET, which is not set/);
    const empty = await secretsFromSources({ stack: 'sec', env: { SHOP_OIDC_CLIENT_SECRET: '' }, readFile: () => undefined }, tokens, fp);
    expect(() => empty.value(oidc.step.object.identity, oidc.path, oidc.token)).toThrow(/SHOP_OIDC_CLIENT_SECRET, which is empty/);
    // A {file} secret that cannot be read from here: the plan names it relative to where plan ran.
    const fromFile = { ...oidc.token, $secret: { file: 'secrets/oidc.txt' } };
    expect(() => unset.value(oidc.step.object.identity, oidc.path, fromFile)).toThrow(/file secrets\/oidc\.txt, which cannot be read: a saved plan names secret files relative to the directory plan ran in/);
    // Every planned secret sits at a secret field; a token plan did not make (no fingerprint) is refused.
    for (const s of found) expect(isSecretPath(findKind(s.step.object.kind)!, s.path), s.path).toBe(true);
    expect(isSecretPath(findKind('httpsEdgeRoute')!, 'description')).toBe(false);
    expect(isSecretPath(findKind('httpsEdgeRoute')!, 'oidc.client_id')).toBe(false);
    expect(() => ok.value(oidc.step.object.identity, oidc.path, { ...oidc.token, fingerprint: null })).toThrow(/has no fingerprint: the saved plan was not made as plan makes it/);
    // Edited plans: a token whose fingerprint was removed is still found (and then refused); one
    // wrapped in a list sits at a path that is no secret field.
    const step = structuredClone(oidc.step);
    const body = (step.request.body as Record<string, Record<string, unknown>>);
    const holder = step.action === 'module.put' ? (body as Record<string, unknown>) : body.oidc;
    const { fingerprint: _, ...bare } = holder.client_secret as Record<string, unknown>;
    holder.client_secret = bare;
    const [found1] = planSecrets([step]);
    expect(found1.path).toBe('oidc.client_secret');
    expect(() => ok.value(step.object.identity, found1.path, found1.token)).toThrow(/has no fingerprint/);
    holder.client_secret = [oidc.token];
    const [found2] = planSecrets([step]);
    expect(found2.path).toBe('oidc.client_secret.0');
    expect(isSecretPath(findKind(step.object.kind)!, found2.path)).toBe(false);
  });
});

describe('watch session (real files, real service)', () => {
  it('applies saves, keeps watching through invalid saves, holds back deletions without --prune, reports drift', async () => {
    const client = await clientFor(svc);
    const dir = copyExample('small');
    const reports: WatchReport[] = [];
    const waitFor = async (pred: (r: WatchReport) => boolean, from: number) => {
      for (let t = 0; t < 400; t++) {
        if (reports.slice(from).some(pred)) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`timed out; reports: ${JSON.stringify(reports.slice(from).map((r) => (r.type === "run-start" ? `${r.type}:${r.trigger}:${r.paths}` : r.type === "plan" ? `plan:${r.plan.steps.map((s) => s.id)}:${r.skippedPrunes}` : r.type)))}`);
    };
    const session = startWatchSession({
      input: { root: dir, stack: 'watch', env: {} }, client, debounceMs: 60, stableMs: 40, intervalMs: 1500,
      report: (r) => reports.push(r),
    });
    try {
      await session.ready;
      await waitFor((r) => r.type === 'applied', 0);
      expect(await remaining(client, dir, 'watch')).toEqual([]);

      let mark = reports.length;
      writeFileSync(join(dir, 'bad.yaml'), 'kind: HTTPSEdge\nname: Not A Name\n');
      await waitFor((r) => r.type === 'invalid', mark);
      rmSync(join(dir, 'bad.yaml'));

      mark = reports.length;
      writeFileSync(join(dir, 'failover-backend.yaml'), readFileSync(join(dir, 'failover-backend.yaml'), 'utf8').replace('App servers, primary then standby', 'Edited'));
      await waitFor((r) => r.type === 'applied' && r.result.done.includes('FailoverBackend/app:update'), mark);

      mark = reports.length;
      writeFileSync(join(dir, 'https-edge.yaml'), readFileSync(join(dir, 'https-edge.yaml'), 'utf8').replace(/  - name: api\n(?:    .*\n|      .*\n)+/, ''));
      await waitFor((r) => r.type === 'plan' && r.skippedPrunes > 0, mark);
      expect((await liveObjects(client)).some((o) => o.identity === 'watch:HTTPSEdge/web/routes/api')).toBe(true);

      // Let every file event of the edits above settle (an interval run may have read the files
      // before chokidar reported them), so only the periodic check runs from here on.
      await new Promise((r) => setTimeout(r, 400));
      await session.idle();
      // Drift: an out-of-band change is reported by the periodic check, not undone.
      const backend = (await liveObjects(client)).find((o) => o.identity === 'watch:FailoverBackend/app')!;
      mark = reports.length;
      await client.send('PATCH', `/backends/failover/${backend.id}`, { description: 'drifted' });
      await waitFor((r) => r.type === 'plan' && r.mode === 'drift' && r.plan.steps.length > 0, mark);
    } finally {
      await session.stop();
    }
    const runIds = reports.filter((r) => r.type === 'run-start').map((r) => (r as { runId: string }).runId);
    expect(new Set(runIds).size).toBe(runIds.length);
  });
});

void tempDir;
