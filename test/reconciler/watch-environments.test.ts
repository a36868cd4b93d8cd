import { appendFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectEnvironment, WatchedEnvironment } from '../../src/reconciler/manifests/environments.js';
import { ManifestCache } from '../../src/reconciler/watch/manifest-cache.js';
import { settingsOutside, startWatchSession, type WatchReport } from '../../src/reconciler/watch/session.js';
import { readLiveState } from '../../src/reconciler/state/read-state.js';
import { cleanupDirs, clientFor, tempDir } from '../helpers/reconcile.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
beforeAll(async () => { svc = await startTestService('pglite'); });
afterAll(async () => { await svc?.close(); cleanupDirs(); });

type Plan = Extract<WatchReport, { type: 'plan' }>;
const ALLOW = 'kind: Policy\nname: shop-description\nmatch: { kinds: [HTTPSEdge] }\nrules:\n  - expression: object.description != "closed"\n    message: the shop is not closed\n';

/**
 * examples/environments with its production overlay and a policy folder beside the stack
 * directory, not in it (`overlays: [../overlays/production]`, `policies: [../policies]`), watched
 * in production.
 */
async function session() {
  const top = tempDir('edgeplane-envwatch-');
  const dir = join(top, 'shop');
  cpSync('examples/environments', dir, { recursive: true });
  cpSync(join(dir, 'overlays'), join(top, 'overlays'), { recursive: true });
  rmSync(join(dir, 'overlays'), { recursive: true });
  mkdirSync(join(top, 'policies'));
  writeFileSync(join(top, 'policies', 'shop.yaml'), ALLOW);
  const tag = Math.random().toString(36).slice(2, 8);
  const stackFile = join(dir, 'edgeplane.yaml');
  writeFileSync(stackFile, readFileSync(stackFile, 'utf8')
    .replace('overlays: [overlays/production]', 'overlays: [../overlays/production]')
    .replace(/domain: (\S+)/g, `domain: ${tag}.$1`) + 'policies: [../policies]\n');
  const environment = selectEnvironment(dir, 'production', { cwd: dir });
  const client = await clientFor(svc);
  const reports: WatchReport[] = [];
  const s = startWatchSession({ input: { root: dir, stack: 'shop-production', env: {}, environment, cwd: dir }, client, debounceMs: 30, stableMs: 30, report: (r) => reports.push(r) });
  const waitFor = async <T extends WatchReport>(pred: (r: WatchReport) => r is T, from: number): Promise<T> => {
    for (let t = 0; t < 600; t++) {
      const hit = reports.slice(from).find(pred);
      if (hit) return hit;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`timed out; reports: ${reports.slice(from).map((r) => r.type + ((r as { error?: string }).error ? `:${(r as { error?: string }).error}` : '') + ((r as { problems?: unknown[] }).problems ? JSON.stringify((r as { problems?: unknown[] }).problems) : '')).join(' ')}`);
  };
  const isPlan = (r: WatchReport): r is Plan => r.type === 'plan';
  const endOk = (r: WatchReport): r is Extract<WatchReport, { type: 'run-end' }> => r.type === 'run-end' && r.status === 'ok';
  await s.ready;
  await waitFor(endOk, 0);
  await s.idle();
  /** Writes `file` (`from` → `to`), and waits for the run it starts: its plan, and its end. */
  const edit = async (file: string, from: string | RegExp, to: string) => {
    const mark = reports.length;
    writeFileSync(file, readFileSync(file, 'utf8').replace(from, to));
    const plan = await waitFor(isPlan, mark);
    await waitFor((r): r is Extract<WatchReport, { type: 'run-end' }> => r.type === 'run-end', mark);
    await s.idle();
    return { plan, reports: reports.slice(mark) };
  };
  /** The live edge (the account's one). */
  const edge = async () => Object.values(await readLiveState(client)).flat().find((o) => Array.isArray(o.hostports)) as { hostports: string[]; description: string };
  return { top, dir, s, reports, edit, edge, client, tag };
}

describe('watch with environments: what the manifests depend on outside their directory', () => {
  it('lists the overlays, the policies and nothing inside the directory', () => {
    const top = tempDir('edgeplane-envwatch-');
    const dir = join(top, 'shop');
    cpSync('examples/environments', dir, { recursive: true });
    expect(settingsOutside(dir)).toEqual([]); // its overlay is inside
    writeFileSync(join(dir, 'edgeplane.yaml'), readFileSync(join(dir, 'edgeplane.yaml'), 'utf8').replace('[overlays/production]', '[../prod-overlay, overlays/production]') + 'policies: [../policies, rules.yaml]\n');
    expect(settingsOutside(dir)).toEqual([join(top, 'policies'), join(top, 'prod-overlay')]);
    // A file watched: its stack file beside it is watched too.
    expect(settingsOutside(join(dir, 'https-edge.yaml'))).toContain(join(dir, 'edgeplane.yaml'));
  });

  it('an overlay or edgeplane.yaml saved after the manifests were expanded reads as changed (nothing applied from the older read)', () => {
    const dir = join(tempDir('edgeplane-envwatch-'), 'shop');
    cpSync('examples/environments', dir, { recursive: true });
    const w = new WatchedEnvironment(dir, 'production', dir);
    const cache = new ManifestCache();
    expect(w.changedSinceExpand()).toBe(false);
    w.expand(cache.loadFiles(dir, dir));
    expect(w.changedSinceExpand()).toBe(false);
    appendFileSync(join(dir, 'overlays', 'production', 'admin-restricted.yaml'), '# saved\n');
    expect(w.changedSinceExpand()).toBe(true);
    w.expand(cache.loadFiles(dir, dir));
    expect(w.changedSinceExpand()).toBe(false);
    appendFileSync(join(dir, 'edgeplane.yaml'), '# saved\n');
    expect(w.changedSinceExpand()).toBe(true);
  });

  it('a save to an overlay outside the directory is planned and applied', { timeout: 60_000 }, async () => {
    const w = await session();
    try {
      const overlay = join(w.top, 'overlays', 'production', 'admin-restricted.yaml');
      const { plan, reports } = await w.edit(overlay, 'ipp_2ZyQ0kR5tWn8Hc3Vb6Lq9Xe2MsA', 'ipp_2ZyQ0kR5tWn8Hc3Vb6Lq9Xe2MsB');
      expect(reports.find((r) => r.type === 'run-start')).toMatchObject({ trigger: 'change', paths: [overlay] });
      expect(plan.plan.steps.map((s) => `${s.action} ${s.object.identity}`)).toEqual(['update HTTPSEdge/web/routes/admin']);
      expect(reports.map((r) => r.type)).toContain('applied');
    } finally {
      await w.s.stop();
    }
  });

  it('a policy saved alone (outside the directory, no manifest changed) is checked against every object', { timeout: 60_000 }, async () => {
    const w = await session();
    try {
      const policy = join(w.top, 'policies', 'shop.yaml');
      // A first save that denies nothing: every object planned, found unchanged (what the last run
      // created is planned again once), so the next save changes no manifest object at all.
      const first = await w.edit(policy, 'is not closed', 'is open');
      expect(first.plan.plan.policy!.outcomes).toEqual([]);
      const { plan } = await w.edit(policy, '!= "closed"', '!= "The shop"');
      expect(plan.plan.steps).toEqual([]);
      expect(plan.plan.policy!.outcomes).toEqual([{ policy: 'shop-description', denied: 1, warned: 0, overridable: true }]);
      // And back: allowed again, by a save of the policy alone.
      const again = await w.edit(policy, '!= "The shop"', '!= "closed"');
      expect(again.plan.plan.policy!.outcomes).toEqual([]);
    } finally {
      await w.s.stop();
    }
  });

  it('a save of edgeplane.yaml (a value of the environment) is planned and applied; an overlay folder named then is watched from that run on', { timeout: 60_000 }, async () => {
    const w = await session();
    try {
      const stackFile = join(w.dir, 'edgeplane.yaml');
      const { plan, reports } = await w.edit(stackFile, `domain: ${w.tag}.shop.example.com`, `domain: www.${w.tag}.shop.example.com`);
      expect(plan.plan.steps.map((s) => `${s.action} ${s.object.identity}`)).toEqual(['update HTTPSEdge/web']);
      expect(reports.map((r) => r.type)).toContain('applied');
      expect((await w.edge()).hostports).toEqual([`www.${w.tag}.shop.example.com:443`]);
      // A second overlay folder, outside too, named by a save of edgeplane.yaml: its own saves start runs.
      mkdirSync(join(w.top, 'more'));
      writeFileSync(join(w.top, 'more', 'desc.yaml'), 'overlay: patch\nkind: HTTPSEdge\nname: web\ndescription: The shop (production)\n');
      const named = await w.edit(stackFile, '[../overlays/production]', '[../overlays/production, ../more]');
      expect(named.plan.plan.steps.map((s) => `${s.action} ${s.object.identity}`)).toEqual(['update HTTPSEdge/web']);
      const saved = await w.edit(join(w.top, 'more', 'desc.yaml'), 'The shop (production)', 'The shop, production');
      expect(saved.plan.plan.steps.map((s) => `${s.action} ${s.object.identity}`)).toEqual(['update HTTPSEdge/web']);
      expect((await w.edge()).description).toBe('The shop, production');
    } finally {
      await w.s.stop();
    }
  });
});
