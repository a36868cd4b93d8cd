import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/cli/commands/apply.js';
import { plan } from '../../src/cli/commands/plan.js';
import { validate } from '../../src/cli/commands/validate.js';
import { EXIT } from '../../src/cli/exit.js';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport } from '../../src/client/transport.js';
import { kindByName } from '../../src/kinds/registry.js';
import { preparePlan } from '../../src/reconciler/plan/prepare.js';
import { parsePlan } from '../../src/reconciler/render/json.js';
import { applySequentially } from '../helpers/apply-plan.js';
import { capture, exitCode } from '../helpers/capture.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';
import { startTestService, type TestClient, type TestService } from '../helpers/service.js';

const CA = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'certs', 'rsa-ca.pem'), 'utf8');
let svc: TestService;
beforeAll(async () => { svc = await startTestService('pglite'); });
afterAll(async () => { await svc?.close(); cleanupDirs(); });


const caYaml = (name: string, extra = '') => `kind: CertificateAuthority\nname: ${name}\n${extra}ca_pem: |\n${CA.replace(/^/gm, '  ')}`;
const foYaml = (name: string, backends: string[]) => `kind: FailoverBackend\nname: ${name}\nbackends: ${JSON.stringify(backends)}\n`;

describe('API client', () => {
  it('reads every object through list pages of 100, following next_page_uri, and nothing else', async () => {
    const c = await svc.account();
    for (let i = 0; i < 230; i++) expect((await c.post('/backends/failover', { backends: [] })).status).toBe(201);
    const client = new ApiClient(httpTransport(svc.url, c.apiKey!));
    const all = await client.list(kindByName('failoverBackend'));
    expect(all).toHaveLength(230);
    expect(new Set(all.map((o) => o.id)).size).toBe(230);
    expect(client.counts).toEqual({ GET: 3 });
  });

  it('asks for the next page before handing the current one on (page handling is not between two requests)', async () => {
    const c = await svc.account();
    for (let i = 0; i < 230; i++) expect((await c.post('/backends/failover', { backends: [] })).status).toBe(201);
    const events: string[] = [];
    const http = httpTransport(svc.url, c.apiKey!);
    let n = 0;
    // The HTTP transport, each request logged.
    const client = new ApiClient({ target: http.target, close: http.close, request: (method, path, body) => { events.push(`request ${++n}`); return http.request(method, path, body); } });
    let page = 0;
    const all = await client.list(kindByName('failoverBackend'), undefined, (items) => events.push(`page ${++page}: ${items.length}`));
    expect(all).toHaveLength(230);
    expect(events).toEqual(['request 1', 'request 2', 'page 1: 100', 'request 3', 'page 2: 100', 'page 3: 30']);
  });

  it('plan reads one list per kind, never a GET per object', async () => {
    const c = await svc.account();
    for (let i = 0; i < 20; i++) await c.post('/backends/failover', { backends: [] });
    const client = new ApiClient(httpTransport(svc.url, c.apiKey!));
    const r = await preparePlan({ root: manifestDir({ 'a.yaml': foYaml('one', []) }), stack: 's', env: {} }, client);
    expect(r.plan!.summary.create).toBe(1);
    expect(client.counts).toEqual({ GET: 3 }); // failover backends, certificate authorities, HTTPS edges (routes inside)
  });

  it('closeAfterRead closes the client once the lists are read (the CLI frees the embedded engine before diffing); close is once only', async () => {
    const c = await svc.account();
    const http = httpTransport(svc.url, c.apiKey!);
    let closes = 0;
    const client = new ApiClient({ ...http, close: async () => { closes++; } });
    const r = await preparePlan({ root: manifestDir({ 'a.yaml': foYaml('one', []) }), stack: 's', env: {} }, client, { closeAfterRead: true });
    expect(r.plan!.summary.create).toBe(1);
    expect(client.counts).toEqual({ GET: 3 });
    expect(closes).toBe(1);
    await client.close();
    expect(closes).toBe(1);
  });

  it('sends the version header and Bearer key; errors carry the API error code', async () => {
    const client = new ApiClient(httpTransport(svc.url, 'ep_not_a_key'));
    await expect(client.list(kindByName('certificateAuthority'))).rejects.toMatchObject({ status: 401, code: 'ERR_UNAUTHORIZED' });
  });
});

describe('edgeplane plan / validate', () => {
  let c: TestClient;
  let flags: { apiUrl: string; apiKey: string };
  beforeAll(async () => {
    c = await svc.account();
    flags = { apiUrl: svc.url, apiKey: c.apiKey! };
  });

  it('exit codes: 2 with --detailed-exitcode when there are changes, 0 once applied, 1 for invalid manifests', async () => {
    const dir = manifestDir({ 'edgeplane.yaml': 'stack: ci\n', 'cas.yaml': caYaml('root', 'description: clients\n'), 'sub/fo.yaml': foYaml('primary', ['secondary']) + '---\n' + foYaml('secondary', []) });
    const out = capture();
    expect(await exitCode(() => plan(out, dir, { ...flags, detailedExitcode: true, out: join(dir, 'plan.json') }))).toBe(EXIT.changes);
    expect(out.text()).toContain('Plan: 3 to create, 0 to update, 0 to delete');
    expect(out.text()).toContain('stack ci');
    const saved = parsePlan(readFileSync(join(dir, 'plan.json'), 'utf8'));
    expect(saved.steps.map((s) => s.id)).toEqual(['CertificateAuthority/root:create', 'FailoverBackend/secondary:create', 'FailoverBackend/primary:create']);

    await applySequentially(new ApiClient(httpTransport(svc.url, c.apiKey!)), saved);
    const again = capture();
    expect(await exitCode(() => plan(again, dir, { ...flags, detailedExitcode: true }))).toBe(EXIT.ok);
    expect(again.text()).toContain('No changes.');

    const md = capture();
    writeFileSync(join(dir, 'cas.yaml'), caYaml('root', 'description: client CA v2\n'));
    expect(await exitCode(() => plan(md, dir, { ...flags, markdown: true }))).toBe(EXIT.ok);
    expect(md.text()).toMatch(/^### edgeplane plan for stack `ci`/);
    expect(md.text()).toContain('| `description` | `"clients"` | `"client CA v2"` |');
    // The comment within --markdown-limit, and the whole plan beside it for a job summary.
    const small = capture();
    expect(await exitCode(() => plan(small, dir, { ...flags, markdown: true, markdownLimit: '2000', outMarkdown: join(dir, 'plan.md') }))).toBe(EXIT.ok);
    expect(small.text().length).toBeLessThanOrEqual(2000);
    expect(readFileSync(join(dir, 'plan.md'), 'utf8')).toContain('| `CertificateAuthority/root` | `description` | `"clients"` | `"client CA v2"` |');
    expect(small.errors).toContain(`the whole plan as Markdown written to ${join(dir, 'plan.md')}`);
    await expect(plan(capture(), dir, { ...flags, markdown: true, markdownLimit: '500' })).rejects.toThrow('--markdown-limit must be a whole number of characters, at least 2000 (got "500")');

    writeFileSync(join(dir, 'bad.yaml'), foYaml('third', ['nowhere']));
    const bad = capture();
    expect(await exitCode(() => plan(bad, dir, flags))).toBe(EXIT.error);
    expect(bad.errors.join('\n')).toMatch(/bad\.yaml:3:\d+: error: backends\[0\]: no FailoverBackend named "nowhere"/);
  });

  it('a comment cut to its limit names the command of this very plan (its stack, targets and --destroy) to see the whole of it', async () => {
    const own = await svc.account();
    const f = { apiUrl: svc.url, apiKey: own.apiKey! };
    const names = Array.from({ length: 40 }, (_, i) => `pool-${i}`);
    const dir = manifestDir({ 'edgeplane.yaml': 'stack: cut\n', 'fo.yaml': names.map((n) => foYaml(n, [])).join('---\n') });
    await applySequentially(new ApiClient(httpTransport(svc.url, own.apiKey!)), (await preparePlan({ root: dir, stack: 'cut', env: {} }, new ApiClient(httpTransport(svc.url, own.apiKey!)))).plan!);
    const md = capture();
    expect(await exitCode(() => plan(md, dir, { ...f, destroy: true, target: ['FailoverBackend/pool-*'], markdown: true, markdownLimit: '2000' }))).toBe(EXIT.ok);
    expect(md.text()).toContain('Not shown here');
    expect(md.text()).toContain(`\`edgeplane plan ${dir} --stack cut --api-url ${svc.url} --target 'FailoverBackend/pool-*' --destroy --out-markdown FILE\` writes the whole plan`);
  });

  it('the threshold counts deletes and replaces: 1,000 description updates plan with exit 2 under a 0.4 % threshold, 5 deletes exit 3, a listed field counts', async () => {
    const own = await svc.account();
    const f = { apiUrl: svc.url, apiKey: own.apiKey! };
    const names = Array.from({ length: 1000 }, (_, i) => `b${i}`);
    const yaml = (desc: string, keep = names) => keep.map((n) => `${foYaml(n, [])}description: ${desc} ${n}\n`).join('---\n');
    const settings = (more = '') => `stack: thr\nsafety:\n  threshold:\n    percent: 0.4\n${more}`;
    const dir = manifestDir({ 'edgeplane.yaml': settings(), 'fo.yaml': yaml('route') });
    await exitCode(() => apply(capture(), dir, { ...f, autoApprove: true }));
    writeFileSync(join(dir, 'fo.yaml'), yaml('backend route'));
    const updates = capture();
    expect(await exitCode(() => plan(updates, dir, { ...f, detailedExitcode: true }))).toBe(EXIT.changes);
    expect(updates.text()).toContain('1000 to update');
    expect(updates.text()).not.toContain('blocked');
    // Deletes still count: 5 of 1,000 is over 0.4 %.
    writeFileSync(join(dir, 'fo.yaml'), yaml('route', names.slice(5)));
    const deletes = capture();
    expect(await exitCode(() => plan(deletes, dir, f))).toBe(EXIT.blocked);
    expect(deletes.text()).toContain('blocked: 5 of 1000 owned failover backends would change');
    // A field count_updates_of lists counts its updates.
    writeFileSync(join(dir, 'edgeplane.yaml'), settings('    count_updates_of: [description]\n'));
    writeFileSync(join(dir, 'fo.yaml'), yaml('backend route'));
    const counted = capture();
    expect(await exitCode(() => plan(counted, dir, f))).toBe(EXIT.blocked);
    expect(counted.text()).toContain('blocked: 1000 of 1000 owned failover backends would change');
  }, 120_000);

  it('exit 3 when the safety threshold blocks the plan; exit 1 on a conflict, with the adopt command', async () => {
    const own = await svc.account();
    const f = { apiUrl: svc.url, apiKey: own.apiKey! };
    const names = Array.from({ length: 10 }, (_, i) => `b${i}`);
    const dir = manifestDir({ 'fo.yaml': names.map((n) => foYaml(n, [])).join('---\n') });
    const first = capture();
    await exitCode(() => plan(first, dir, { ...f, out: join(dir, 'p.json') }));
    await applySequentially(new ApiClient(httpTransport(svc.url, own.apiKey!)), parsePlan(readFileSync(join(dir, 'p.json'), 'utf8')));
    writeFileSync(join(dir, 'fo.yaml'), names.slice(0, 6).map((n) => foYaml(n, [])).join('---\n'));
    const blocked = capture();
    expect(await exitCode(() => plan(blocked, dir, f))).toBe(EXIT.blocked);
    expect(blocked.text()).toContain('blocked: 4 of 10 owned failover backends would change');
    // apply's refusal names the kind as the plan does, not by its registry name (failoverBackend).
    const refused = await apply(capture(), dir, { ...f, autoApprove: true }).then(() => undefined, (e: unknown) => e as { code: number; message: string });
    expect(refused?.code).toBe(EXIT.blocked);
    expect(refused?.message).toBe('apply blocked by the safety threshold (4 of 10 owned failover backends would change); review the plan and pass --force to go ahead');

    const other = await svc.account();
    const g = { apiUrl: svc.url, apiKey: other.apiKey! };
    await other.post('/certificate_authorities', { ca_pem: CA });
    const cdir = manifestDir({ 'ca.yaml': caYaml('root') });
    const conflict = capture();
    expect(await exitCode(() => plan(conflict, cdir, g))).toBe(EXIT.error);
    expect(conflict.text()).toContain(`adopt it with: edgeplane plan ${cdir} --stack default --api-url ${svc.url} --adopt`);
    const adopt = capture();
    expect(await exitCode(() => plan(adopt, cdir, { ...g, adopt: true, detailedExitcode: true }))).toBe(EXIT.changes);
    expect(adopt.text()).toContain('adopts unmanaged certificate authority');
  });

  it('credentials in --api-url (user and password) appear in no plan output, nor in the adopt command', async () => {
    const own = await svc.account();
    const u = new URL(svc.url);
    u.username = 'ci-user-9f2';
    u.password = 'proxy-pass-7c1';
    const f = { apiUrl: u.toString(), apiKey: own.apiKey! };
    await own.post('/certificate_authorities', { ca_pem: CA });
    const dir = manifestDir({ 'ca.yaml': caYaml('root'), 'fo.yaml': foYaml('primary', []) });
    const outputs: string[] = [];
    for (const extra of [{ json: true }, { markdown: true }, {}]) {
      const out = capture();
      expect(await exitCode(() => plan(out, dir, { ...f, ...extra, out: join(dir, 'p.json'), outMarkdown: join(dir, 'p.md') }))).toBe(EXIT.error);
      outputs.push(out.text(), out.errors.join('\n'), readFileSync(join(dir, 'p.md'), 'utf8'));
    }
    const all = outputs.join('\n');
    expect(all).toContain(`--api-url http://${u.host}`);
    expect(all).toContain(`Target: \`http://${u.host}\``);
    expect(all).not.toContain('proxy-pass-7c1');
    expect(all).not.toContain('ci-user-9f2');
  });

  it('apply is not blocked by deleting the duplicates two applies at once made, and converges', async () => {
    const own = await svc.account();
    const f = { apiUrl: svc.url, apiKey: own.apiKey! };
    const dir = manifestDir({ 'fo.yaml': Array.from({ length: 10 }, (_, i) => foYaml(`b${i}`, [])).join('---\n') });
    await exitCode(() => plan(capture(), dir, { ...f, out: join(dir, 'p.json') }));
    // Two applies of the same plan at once: every failover backend is made twice (10 of 20 are duplicates).
    const client = new ApiClient(httpTransport(svc.url, own.apiKey!));
    const made = parsePlan(readFileSync(join(dir, 'p.json'), 'utf8'));
    await Promise.all([applySequentially(client, made), applySequentially(client, made)]);
    expect(await client.list(kindByName('failoverBackend'))).toHaveLength(20);
    const out = capture();
    expect(await exitCode(() => apply(out, dir, { ...f, autoApprove: true })), out.errors.join('\n')).toBe(EXIT.ok);
    expect(out.text()).toContain('Plan: 0 to create, 0 to update, 10 to delete');
    expect(out.text()).not.toContain('blocked');
    expect(await client.list(kindByName('failoverBackend'))).toHaveLength(10);
    expect(await exitCode(() => plan(capture(), dir, { ...f, detailedExitcode: true }))).toBe(EXIT.ok);
  });

  it('validate: literal problems listed with positions; exit 1; a valid directory exits 0', async () => {
    const out = capture();
    const dir = manifestDir({ 'a.yaml': foYaml('a', ['a']) });
    expect(await exitCode(() => validate(out, dir, {}))).toBe(EXIT.error);
    expect(out.errors[0]).toMatch(/a\.yaml:3:12: error: backends\[0\]: references form a cycle: a → a \[reference-cycle\]/);
    const ok = capture();
    expect(await exitCode(() => validate(ok, manifestDir({ 'a.yaml': foYaml('a', []) }), {}))).toBe(EXIT.ok);
    expect(ok.text()).toBe('1 file, 1 object: valid');
  });
});
