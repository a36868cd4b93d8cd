import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply, destroy } from '../../src/cli/commands/apply.js';
import { plan } from '../../src/cli/commands/plan.js';
import { CliExit, EXIT } from '../../src/cli/exit.js';
import { capture, exitCode } from '../helpers/capture.js';
import { cleanupDirs, manifestDir, tempDir } from '../helpers/reconcile.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
beforeAll(async () => { svc = await startTestService('pglite'); });
afterAll(async () => { await svc?.close(); cleanupDirs(); });

const pem = (f: string) => readFileSync(join(import.meta.dirname, '..', 'fixtures', 'certs', f), 'utf8');
const ca = (file: string) => `kind: CertificateAuthority\nname: root\nprotect: true\nca_pem: |\n${pem(file).replace(/^/gm, '  ')}`;
const pool = 'kind: FailoverBackend\nname: pool\nbackends: []\n';
const fo = (name: string, extra = '') => `kind: FailoverBackend\nname: ${name}\n${extra}backends: []\n`;
const planOf = async (dir: string, flags: object) => {
  const out = capture();
  await exitCode(() => plan(out, dir, { ...flags, json: true }));
  return JSON.parse(out.text()) as { steps: { id: string }[]; blocked: unknown[]; warnings: string[] };
};

/** The message of the CliExit a command ends with, and its code. */
async function refusal(run: () => Promise<void>): Promise<{ code: number; message: string }> {
  try {
    await run();
  } catch (err) {
    if (err instanceof CliExit) return { code: err.code, message: err.message };
    throw err;
  }
  return { code: 0, message: '' };
}

/** The commands as the CLI runs them, against the service over HTTP (`edgeplane` processes: test/process/plan-scope-e2e.test.ts). */
describe('--target and the stack file\'s threshold through plan and apply', () => {
  it('applies only the targeted object, and blocks by the file\'s threshold with the protected object kept', async () => {
    const c = await svc.account();
    const target = { apiUrl: svc.url, apiKey: c.apiKey! };
    const settings = 'stack: tgt\nsafety:\n  threshold: { percent: 50, min_owned: 2 }\n  protect: ["FailoverBackend/keep"]\n';
    const dir = manifestDir({ 'edgeplane.yaml': settings, 'pool.yaml': [fo('a'), fo('b'), fo('keep')].join('---\n') });
    expect(await exitCode(() => apply(capture(), dir, { ...target, autoApprove: true }))).toBe(0);

    writeFileSync(join(dir, 'pool.yaml'), [fo('a', 'description: a v2\n'), fo('b', 'description: b v2\n'), fo('keep')].join('---\n'));
    const targeted = capture();
    expect(await exitCode(() => apply(targeted, dir, { ...target, autoApprove: true, target: ['FailoverBackend/a'] }))).toBe(0);
    expect(targeted.text()).toContain('PARTIAL PLAN: only what --target FailoverBackend/a selects; 1 step of the stack outside the targets is not planned');
    expect((await planOf(dir, target)).steps.map((s) => s.id)).toEqual(['FailoverBackend/b:update']);

    // Two of three owned backends pruned: over the file's 50 % (the defaults would not apply below 10).
    // `keep` leaves the manifests too, but it is protected: kept, not counted.
    writeFileSync(join(dir, 'pool.yaml'), fo('other'));
    const blocked = await planOf(dir, target);
    expect(blocked.blocked).toEqual([{ kind: 'failoverBackend', owned: 3, changed: 2, deletes: 2, updates: 0 }]);
    expect(blocked.warnings.filter((w) => /^FailoverBackend\/keep \(bkdfo_\w+\) is no longer in the manifests but is protected: kept$/.test(w))).toHaveLength(1);
    const refused = await refusal(() => apply(capture(), dir, { ...target, autoApprove: true }));
    expect(refused).toEqual({ code: EXIT.blocked, message: expect.stringContaining('apply blocked by the safety threshold (2 of 3 owned failover backends would change)') });
  });
});

describe('protected objects through plan, apply and destroy', { timeout: 120_000 }, () => {
  it('a replace of a protected CA is refused without --allow-protected-changes, saved plan or not; destroy keeps it unless allowed', async () => {
    const c = await svc.account();
    const target = { apiUrl: svc.url, apiKey: c.apiKey! };
    const dir = manifestDir({ 'edgeplane.yaml': 'stack: guarded\n', 'ca.yaml': ca('rsa-ca.pem'), 'pool.yaml': pool });
    expect(await exitCode(() => apply(capture(), dir, { ...target, autoApprove: true }))).toBe(0);

    writeFileSync(join(dir, 'ca.yaml'), ca('rsa-ca-2.pem'));
    const file = join(tempDir(), 'plan.json');
    const planned = capture();
    expect(await exitCode(() => plan(planned, dir, { ...target, out: file }))).toBe(EXIT.blocked);
    expect(planned.text()).toMatch(/protected: CertificateAuthority\/root \(ca_\w+\) would be replaced; apply needs --allow-protected-changes/);
    expect(JSON.parse(readFileSync(file, 'utf8')).protectedChanges).toEqual([expect.objectContaining({ identity: 'CertificateAuthority/root', action: 'replace' })]);

    for (const run of [() => apply(capture(), undefined, { ...target, plan: file }), () => apply(capture(), dir, { ...target, autoApprove: true })]) {
      const r = await refusal(run);
      expect(r.code).toBe(EXIT.blocked);
      expect(r.message).toMatch(/^apply blocked by protected objects: CertificateAuthority\/root \(ca_\w+\) would be replaced; review the plan and pass --allow-protected-changes/);
    }
    const allowed = capture();
    expect(await exitCode(() => apply(allowed, undefined, { ...target, plan: file, allowProtectedChanges: true }))).toBe(0);
    expect(allowed.errors.join('\n')).toContain('going ahead because of --allow-protected-changes');

    // destroy: the pool goes, the protected CA stays (with a warning) until the flag is given.
    const kept = capture();
    expect(await exitCode(() => destroy(kept, dir, { ...target, autoApprove: true }))).toBe(0);
    expect(kept.text()).toMatch(/CertificateAuthority\/root \(ca_\w+\) is protected: kept \(--allow-protected-changes deletes it\)/);
    expect(await exitCode(() => destroy(capture(), dir, { ...target, autoApprove: true, allowProtectedChanges: true }))).toBe(0);
    const empty = capture();
    await exitCode(() => plan(empty, dir, { ...target, json: true }));
    expect((JSON.parse(empty.text()) as { steps: { action: string }[] }).steps.map((s) => s.action)).toEqual(['create', 'create']);
  });
});
