import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_SAFETY, resolveStack, stackSafety } from '../../src/reconciler/manifests/config.js';
import { planFromState } from '../helpers/plan-lists.js';
import { checkSelectors, nearest, selector, UnknownSelectorError } from '../../src/reconciler/plan/selectors.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';
import { expandObserved } from '../helpers/scenario.js';
import type { Body } from '../../src/kinds/types.js';

afterAll(() => cleanupDirs());

const fo = (name: string, extra = '') => `kind: FailoverBackend\nname: ${name}\n${extra}backends: ["bkdhr_000000000000000000000000001"]\n`;
/** Live failover backends of stack `prod`, one per name (ids in order), as the list API gives them. */
const live = (names: string[], protect: string[] = []) => expandObserved({
  backends: names.map((n, i): Body => ({ id: `bkdfo_${String(i + 1).padStart(27, '0')}`, backends: ['bkdhr_000000000000000000000000001'], $marker: { id: `FailoverBackend/${n}`, ...(protect.includes(n) ? { protect: true } : {}) } })),
}, 'prod');

async function planDir(dir: string, names: string[], extra: { protect?: string[]; allowProtected?: boolean; targets?: string[]; destroy?: boolean; liveProtect?: string[] } = {}) {
  const safety = stackSafety(dir);
  const r = (await planFromState({
    root: relative(process.cwd(), dir), stack: 'prod', env: {}, threshold: safety.threshold,
    protect: extra.protect ?? safety.protect, allowProtected: extra.allowProtected, targets: extra.targets, destroy: extra.destroy,
  }, live(names, extra.liveProtect), 'https://api.example.test'));
  expect(r.problems.filter((p) => p.severity === 'error')).toEqual([]);
  return r.plan!;
}

describe('safety settings in edgeplane.yaml', () => {
  it('default to a 30 % threshold from 10 owned objects and no protected selectors', async () => {
    expect(stackSafety(manifestDir({ 'a.yaml': fo('a') }))).toEqual({ threshold: { ratio: 0.3, minOwned: 10 }, protect: [] });
    expect(stackSafety(manifestDir({ 'edgeplane.yaml': 'stack: prod\n' }))).toEqual({ threshold: DEFAULT_SAFETY.threshold, protect: [] });
  });

  it('take the threshold from the file: 3 of 4 pruned is blocked at 50 % from 2 owned, not by the defaults', async () => {
    const names = ['a', 'b', 'c', 'd'];
    const strict = manifestDir({ 'edgeplane.yaml': 'stack: prod\nsafety:\n  threshold:\n    percent: 50\n    min_owned: 2\n', 'a.yaml': fo('a') });
    expect(stackSafety(strict).threshold).toEqual({ ratio: 0.5, minOwned: 2 });
    const counted = manifestDir({ 'edgeplane.yaml': 'stack: prod\nsafety:\n  threshold:\n    count_updates_of: [hostports, backend.backend_id, HTTPSEdge]\n', 'a.yaml': fo('a') });
    expect(stackSafety(counted).threshold).toEqual({ ratio: 0.3, minOwned: 10, countUpdatesOf: { fields: ['hostports', 'backend.backend_id'], kinds: ['httpsEdge'] } });
    expect(resolveStack(counted).stack).toBe('prod');
    expect(() => resolveStack(manifestDir({ 'edgeplane.yaml': 'safety:\n  threshold:\n    count_updates_of: ["Host Ports"]\n' }))).toThrow(/count_updates_of\.0.*must be a kind \(CertificateAuthority|must be a kind/);
    expect((await planDir(strict, names)).blocked).toEqual([{ kind: 'failoverBackend', owned: 4, changed: 3, deletes: 3, updates: 0 }]);
    const defaults = manifestDir({ 'edgeplane.yaml': 'stack: prod\n', 'a.yaml': fo('a') });
    const plan = (await planDir(defaults, names));
    expect(plan.summary.delete).toBe(3);
    expect(plan.blocked).toEqual([]);
  });

  it('refuse unknown keys and wrong values, naming the file and the key', async () => {
    const bad = (yaml: string) => () => stackSafety(manifestDir({ 'edgeplane.yaml': `stack: prod\nsafety:\n${yaml}` }));
    expect(bad('  treshold: {percent: 20}\n')).toThrow(/edgeplane\.yaml: safety: unknown key treshold \(known: threshold, protect\)/);
    expect(bad('  threshold: {percent: 120}\n')).toThrow(/safety\.threshold\.percent must be a number from 0 to 100, not 120/);
    expect(bad('  threshold: {percent: "30%"}\n')).toThrow(/safety\.threshold\.percent must be a number/);
    expect(bad('  threshold: {min_owned: 2.5}\n')).toThrow(/safety\.threshold\.min_owned must be a whole number/);
    expect(bad('  threshold: {ratio: 0.3}\n')).toThrow(/safety\.threshold: unknown key ratio \(known: percent, min_owned, count_updates_of\)/);
    expect(bad('  threshold: {count_updates_of: hostports}\n')).toThrow(/safety\.threshold\.count_updates_of must be a list of fields/);
    expect(bad('  threshold: {count_updates_of: [HTTPSEdgee]}\n')).toThrow(/safety\.threshold\.count_updates_of\[0\]: "HTTPSEdgee" is not a kind \(did you mean "HTTPSEdge"\?\)/);
    expect(bad('  threshold: {count_updates_of: ["Host Ports"]}\n')).toThrow(/count_updates_of\[0\]: "Host Ports" is neither a kind nor a field/);
    expect(bad('  protect: HTTPSEdge/web\n')).toThrow(/safety\.protect must be a list of selectors/);
    expect(bad('  protect: [web]\n')).toThrow(/safety\.protect\[0\]: "web" is not a selector/);
  });

  it('protect objects by selector: a pruned one is kept unless --allow-protected-changes, which lists it as a protected delete', async () => {
    const dir = manifestDir({ 'edgeplane.yaml': 'stack: prod\nsafety:\n  protect: ["FailoverBackend/legacy-*"]\n', 'a.yaml': fo('keep') });
    const kept = (await planDir(dir, ['keep', 'legacy-1', 'gone']));
    expect(kept.steps.map((s) => s.id)).toEqual(['FailoverBackend/gone:delete']);
    expect(kept.warnings).toEqual(['FailoverBackend/legacy-1 (bkdfo_000000000000000000000000002) is no longer in the manifests but is protected: kept']);
    expect(kept.protectedChanges).toBeUndefined();
    const allowed = (await planDir(dir, ['keep', 'legacy-1', 'gone'], { allowProtected: true }));
    expect(allowed.steps.map((s) => s.id).sort()).toEqual(['FailoverBackend/gone:delete', 'FailoverBackend/legacy-1:delete']);
    expect(allowed.protectedChanges).toEqual([{ step: 'FailoverBackend/legacy-1:delete', identity: 'FailoverBackend/legacy-1', id: 'bkdfo_000000000000000000000000002', action: 'delete' }]);
  });
});

describe('selectors', () => {
  it('match identities exactly or by glob, a * never crossing a /', async () => {
    expect(selector('HTTPSEdge/shop-*').matches('HTTPSEdge/shop-eu')).toBe(true);
    expect(selector('HTTPSEdge/shop-*').matches('HTTPSEdge/shop-eu/routes/api')).toBe(false);
    expect(selector('HTTPSEdge/*/routes/api').matches('HTTPSEdge/shop-eu/routes/api')).toBe(true);
    expect(selector('HTTPSEdge/web').matches('HTTPSEdge/webx')).toBe(false);
  });

  it('an unknown one is an error listing the nearest names', async () => {
    const ids = ['HTTPSEdge/web', 'HTTPSEdge/shop', 'FailoverBackend/pool', 'HTTPSEdge/web/routes/api'];
    expect(nearest('HTTPSEdge/wbe', ids)).toEqual(['HTTPSEdge/web', 'HTTPSEdge/shop', 'HTTPSEdge/web/routes/api']);
    expect(() => checkSelectors([selector('HTTPSEdge/wbe'), selector('HTTPSEdge/web'), selector('httpsedge/shop-*')], ids)).toThrow(
      '--target HTTPSEdge/wbe names no object of this stack (nearest: HTTPSEdge/web, HTTPSEdge/shop, HTTPSEdge/web/routes/api); --target httpsedge/shop-* names no object of this stack (nearest: HTTPSEdge/shop,',
    );
  });

  it('names of live objects only (pruned ones) count as known: targeting a prune deletes only it', async () => {
    const dir = manifestDir({ 'a.yaml': fo('keep') });
    const plan = (await planDir(dir, ['keep', 'old-1', 'old-2'], { targets: ['FailoverBackend/old-2'] }));
    expect(plan.steps.map((s) => s.id)).toEqual(['FailoverBackend/old-2:delete']);
    expect(plan.partial).toEqual({ targets: ['FailoverBackend/old-2'], created: [], omitted: 1 });
    // A warning about objects outside the targets only is not this plan's; one about a target is.
    const guarded = (await planDir(dir, ['keep', 'old-1', 'old-2'], { protect: ['FailoverBackend/old-1'], targets: ['FailoverBackend/old-2'] }));
    expect(guarded.warnings).toEqual([]);
    expect((await planDir(dir, ['keep', 'old-1', 'old-2'], { protect: ['FailoverBackend/old-1'], targets: ['FailoverBackend/old-*'] })).warnings)
      .toEqual(['FailoverBackend/old-1 (bkdfo_000000000000000000000000002) is no longer in the manifests but is protected: kept']);
    let err: unknown;
    try {
      (await planDir(dir, ['keep', 'old-1'], { targets: ['FailoverBackend/old-3'] }));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UnknownSelectorError);
    expect((err as UnknownSelectorError).unknown).toEqual([{ selector: 'FailoverBackend/old-3', nearest: ['FailoverBackend/old-1', 'FailoverBackend/keep'] }]);
  });
});

describe('destroy', () => {
  it('deletes every owned object but the protected ones, without the threshold; with --allow-protected-changes those too, listed', async () => {
    const dir = manifestDir({ 'a.yaml': fo('a') + '---\n' + fo('b', 'protect: true\n') });
    const names = Array.from({ length: 12 }, (_, i) => `o${i}`).concat('a', 'b');
    const plan = (await planDir(dir, names, { destroy: true }));
    // `b` is protected in its manifest (its live marker does not say so yet): kept.
    expect(plan.steps).toHaveLength(13);
    expect(plan.steps.every((s) => s.action === 'delete')).toBe(true);
    expect(plan.blocked).toEqual([]);
    expect(plan.destroy).toBe(true);
    expect(plan.warnings).toEqual(['FailoverBackend/b (bkdfo_000000000000000000000000014) is protected: kept (--allow-protected-changes deletes it)']);
    const all = (await planDir(dir, names, { destroy: true, allowProtected: true }));
    expect(all.steps).toHaveLength(14);
    expect(all.protectedChanges?.map((c) => c.identity)).toEqual(['FailoverBackend/b']);
    // With --target, only what it names.
    const one = (await planDir(dir, names, { destroy: true, targets: ['FailoverBackend/o1*'] }));
    expect(one.steps.map((s) => s.object.identity).sort()).toEqual(['FailoverBackend/o1', 'FailoverBackend/o10', 'FailoverBackend/o11']);
  });
});

describe('protected objects and replaces', () => {
  const pem = (f: string) => readFileSync(join(import.meta.dirname, '..', 'fixtures', 'certs', f), 'utf8');
  const ca = (protect: string) => `kind: CertificateAuthority\nname: root\n${protect}ca_pem: |\n${pem('rsa-ca-2.pem').replace(/^/gm, '  ')}`;
  const planCa = async (yaml: string, liveProtect: boolean, allowProtected?: boolean) => (await planFromState({
    root: relative(process.cwd(), manifestDir({ 'ca.yaml': yaml })), stack: 'prod', env: {}, allowProtected,
  }, expandObserved({ certificate_authorities: [{ id: 'ca_000000000000000000000000001', $pem: 'rsa-ca.pem', $marker: { id: 'CertificateAuthority/root', ...(liveProtect ? { protect: true } : {}) } }] }, 'prod'), 'https://api.example.test')).plan!;

  it('a replace of an object its manifest protects is listed for --allow-protected-changes, whatever its marker says', async () => {
    const blocked = (await planCa(ca('protect: true\n'), false));
    expect(blocked.steps.map((s) => s.action)).toEqual(['replace', 'delete']);
    expect(blocked.protectedChanges).toEqual([{ step: 'CertificateAuthority/root:replace', identity: 'CertificateAuthority/root', id: 'ca_000000000000000000000000001', action: 'replace' }]);
    expect((await planCa(ca('protect: true\n'), false, true)).protectedChanges).toHaveLength(1);
  });

  it('removing protect in the manifest lets the replace go in the same change (the manifest wins over the old marker)', async () => {
    expect((await planCa(ca(''), true)).protectedChanges).toBeUndefined();
  });
});

describe('--target when the targets wait for a step outside them', () => {
  it('names the step outside that holds them (not a target\'s own), leaves out the creations kept only for them, and counts as changes', async () => {
    const { scopePlan } = await import('../../src/reconciler/plan/scope.js');
    const { liveView } = await import('../../src/reconciler/plan/live-view.js');
    const { hasChanges } = await import('../../src/reconciler/plan/types.js');
    const step = (id: string, identity: string, action: string, dependsOn: string[] = []) => ({ id, action, object: { kind: 'x', identity, name: identity }, request: { method: 'PATCH', path: '/' }, changes: [], dependsOn });
    const plan = {
      steps: [
        step('FailoverBackend/new:create', 'FailoverBackend/new', 'create'),
        step('CertificateAuthority/ca:replace', 'CertificateAuthority/ca', 'replace'),
        step('HTTPSEdge/e:update', 'HTTPSEdge/e', 'update', ['CertificateAuthority/ca:replace', 'FailoverBackend/new:create']),
        step('HTTPSEdge/e/routes/r:update', 'HTTPSEdge/e/routes/r', 'update', ['HTTPSEdge/e:update']),
      ],
      warnings: [], conflicts: [], blocked: [], observed: {}, summary: { create: 1, update: 2, replace: 1, delete: 0 },
    };
    const desired = ['HTTPSEdge/e', 'HTTPSEdge/e/routes/r', 'FailoverBackend/new', 'CertificateAuthority/ca'].map((identity) => ({ identity }));
    const scoped = scopePlan(plan as never, ['HTTPSEdge/e'], desired as never, [], liveView([]), undefined);
    expect(scoped.steps).toEqual([]);
    expect(scoped.warnings).toEqual([
      'HTTPSEdge/e:update is left out: it waits for CertificateAuthority/ca:replace, which is outside the targets (add --target CertificateAuthority/ca to plan both)',
      'HTTPSEdge/e/routes/r:update is left out: it waits for CertificateAuthority/ca:replace, which is outside the targets (add --target CertificateAuthority/ca to plan both)',
    ]);
    expect(scoped.partial).toMatchObject({ created: [], waiting: 2 });
    expect(hasChanges(scoped)).toBe(true); // --detailed-exitcode: 2, not "no changes"
  });
});
