import { appendFileSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/client/api-client.js';
import { stackSafety } from '../../src/reconciler/manifests/config.js';
import { ManifestCache } from '../../src/reconciler/watch/manifest-cache.js';
import { startWatchSession, type WatchReport } from '../../src/reconciler/watch/session.js';
import { applyDir, cleanupDirs, clientFor, copyExample, duplicates, liveObjects, remaining, tempDir } from '../helpers/reconcile.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
beforeAll(async () => { svc = await startTestService('pglite'); });
afterAll(async () => { await svc?.close(); cleanupDirs(); });

type Plan = Extract<WatchReport, { type: 'plan' }>;

/** A watch session on a copy of examples/small, with helpers to edit and wait. */
async function session(stack: string, extra: { intervalMs?: number; repair?: boolean; prune?: boolean; confirmDestructiveMs?: number; followSafety?: boolean } = {}) {
  const client = await clientFor(svc);
  const dir = copyExample('small');
  const reports: WatchReport[] = [];
  const { followSafety, ...rest } = extra;
  // As the CLI runs it: the stack file's safety settings, read again before each run.
  const readSafety = followSafety ? () => stackSafety(dir) : undefined;
  const s = startWatchSession({ input: { root: dir, stack, env: {}, ...readSafety?.() }, client, debounceMs: 30, stableMs: 30, readSafety, ...rest, report: (r) => reports.push(r) });
  const waitFor = async <T extends WatchReport>(pred: (r: WatchReport) => r is T, from: number): Promise<T> => {
    for (let t = 0; t < 600; t++) {
      const hit = reports.slice(from).find(pred);
      if (hit) return hit;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`timed out; reports: ${reports.slice(from).map((r) => r.type).join(" ")} (all: ${reports.map((r) => r.type + ((r as { error?: string }).error ? ":" + (r as { error?: string }).error : "") + ((r as { paths?: string[] }).paths ? ":" + (r as { paths?: string[] }).paths!.join(",") : "")).join(" ")})`);
  };
  const isPlan = (r: WatchReport): r is Plan => r.type === 'plan';
  const endOk = (r: WatchReport): r is Extract<WatchReport, { type: 'run-end' }> => r.type === 'run-end' && r.status === 'ok';
  await s.ready;
  await waitFor(endOk, 0);
  const edit = async (file: string, from: string, to: string) => {
    const mark = reports.length;
    const path = join(dir, file);
    writeFileSync(path, readFileSync(path, 'utf8').replace(from, to));
    const plan = await waitFor(isPlan, mark);
    await waitFor(endOk, mark);
    await s.idle();
    return { plan, reports: reports.slice(mark) };
  };
  /** `waitFor`, then until the session is idle. */
  const upTo = async <T extends WatchReport>(pred: (r: WatchReport) => r is T, from: number): Promise<T> => { const r = await waitFor(pred, from); await s.idle(); return r; };
  /**
   * The site route gets an OIDC login whose client secret is read from a file beside the directory
   * (outside it), written first with `value` when given: the file's path.
   */
  const fileSecret = (value?: string): string => {
    const name = `secret-${stack}-${Date.now()}.txt`;
    if (value !== undefined) writeFileSync(join(dir, '..', name), value);
    const path = join(dir, 'https-edge.yaml');
    writeFileSync(path, readFileSync(path, 'utf8').replace('    compression: {}\n', `    compression: {}\n    oidc: { issuer: "https://id.example.com", client_id: web, client_secret: { file: ../${name} } }\n`));
    return join(dir, '..', name);
  };
  return { client, dir, reports, s, edit, waitFor, upTo, fileSecret, isPlan };
}

async function routeId(client: ApiClient, identity: string): Promise<string> {
  return (await liveObjects(client)).find((o) => o.identity === identity)!.id;
}

describe('watch keeps its state warm between runs', () => {
  it('checks the stack\'s policies on what a save changes, and applies nothing a policy denies', async () => {
    const w = await session('guarded');
    try {
      writeFileSync(join(w.dir, 'edgeplane.yaml'), readFileSync(join(w.dir, 'edgeplane.yaml'), 'utf8') + 'policies: [rules.yaml]\n');
      writeFileSync(join(w.dir, 'rules.yaml'), 'kind: Policy\nname: no-wildcards\nmatch: { kinds: [HTTPSEdge] }\nrules:\n  - expression: object.hostports.all(h, !h.startsWith("*."))\n    message: no wildcard hostports\n');
      const before = (await liveObjects(w.client)).find((o) => o.identity === 'HTTPSEdge/web');
      const mark = w.reports.length;
      const path = join(w.dir, 'https-edge.yaml');
      writeFileSync(path, readFileSync(path, 'utf8').replace('hostports: ["', 'hostports: ["*.w.example.com:443", "'));
      const blocked = await w.upTo((r): r is Extract<WatchReport, { type: 'blocked' }> => r.type === 'blocked', mark);
      expect(blocked.plan.policy!.outcomes).toEqual([{ policy: 'no-wildcards', denied: 1, warned: 0, overridable: true }]);
      expect(w.reports.slice(mark).map((r) => r.type)).not.toContain('applied');
      expect((await liveObjects(w.client)).find((o) => o.identity === 'HTTPSEdge/web')).toEqual(before);
    } finally {
      await w.s.stop();
    }
  });

  it('a save re-reads only the object it touches, and the live state then matches the manifests', async () => {
    const w = await session('warm');
    try {
      const first = w.reports.find(w.isPlan)!;
      expect(first.read).toEqual({ full: true, requests: 3 }); // one list page per kind
      // The run after an apply re-reads what it wrote (here: the three objects it created).
      const { plan } = await w.edit('failover-backend.yaml', 'App servers, primary then standby', 'Edited once');
      expect(plan.read).toEqual({ full: false, requests: 3 });
      expect(plan.plan.steps.map((x) => x.id)).toEqual(['FailoverBackend/app:update']);
      // The backend it just wrote, and the edge this save touches.
      const second = await w.edit('https-edge.yaml', 'Public site and partner API', 'Edited edge');
      expect(second.plan.read).toEqual({ full: false, requests: 2 });
      // A save that changes no object re-reads only what the last run wrote.
      const quiet = await w.edit('failover-backend.yaml', 'kind: FailoverBackend', '# a comment\nkind: FailoverBackend');
      expect(quiet.plan.read).toEqual({ full: false, requests: 1 });
      expect(quiet.plan.plan.steps).toEqual([]);
      const none = await w.edit('failover-backend.yaml', '# a comment\n', '# another comment\n');
      expect(none.plan.read).toEqual({ full: false, requests: 0 });
      expect(second.plan.plan.steps.map((x) => x.id)).toEqual(['HTTPSEdge/web:update']);
      // A route edit re-reads its edge (which lists its routes), and adding a route creates only it.
      const third = await w.edit('https-edge.yaml', '  - name: api\n', '  - name: extra\n    match_type: path_prefix\n    match: /extra/\n    backend: { backend_id: app }\n  - name: api\n');
      expect(third.plan.plan.steps.map((x) => x.id)).toEqual(['HTTPSEdge/web/routes/extra:create']);
      expect(await remaining(w.client, w.dir, 'warm')).toEqual([]);
    } finally {
      await w.s.stop();
    }
  });

  it('a save that touches more objects than a full read takes pages reads everything instead', async () => {
    const w = await session('many');
    try {
      const extra = join(w.dir, 'extra.yaml');
      const doc = (n: number, d: string) => `kind: FailoverBackend\nname: extra-${n}\ndescription: ${d}\nbackends: []\n`;
      writeFileSync(extra, [1, 2, 3, 4].map((n) => doc(n, 'one')).join('---\n'));
      await w.waitFor((r): r is WatchReport => r.type === 'applied', 0);
      await w.s.idle();
      await w.edit('failover-backend.yaml', 'kind: FailoverBackend', '# settle\nkind: FailoverBackend');
      // Four objects change; the three kinds fit in one page each: three requests read them all.
      const { plan } = await w.edit('extra.yaml', /one/g as unknown as string, 'two');
      expect(plan.read).toEqual({ full: true, requests: 3 });
      expect(plan.plan.steps.map((x) => x.id).sort()).toEqual([1, 2, 3, 4].map((n) => `FailoverBackend/extra-${n}:update`));
    } finally {
      await w.s.stop();
    }
  });

  it('a save does not see changes made elsewhere to objects it does not touch; a save that does, does', async () => {
    const w = await session('stale');
    try {
      await w.edit('failover-backend.yaml', 'kind: FailoverBackend', '# settle: re-read what the first apply wrote\nkind: FailoverBackend');
      // Deleted behind the session's back: the kept state still has the route.
      const api = await routeId(w.client, 'stale:HTTPSEdge/web/routes/api');
      const edge = await routeId(w.client, 'stale:HTTPSEdge/web');
      await w.client.send('DELETE', `/edges/https/${edge}/routes/${api}`);
      const backendOnly = await w.edit('failover-backend.yaml', 'App servers, primary then standby', 'Edited');
      expect(backendOnly.plan.read.full).toBe(false);
      expect(backendOnly.plan.plan.steps.map((x) => x.id)).toEqual(['FailoverBackend/app:update']);
      // A save to the edge re-reads it (with its routes) and puts the route back.
      const { plan } = await w.edit('https-edge.yaml', 'Public site and partner API', 'Edited edge');
      expect(plan.plan.steps.map((x) => x.id).sort()).toEqual(['HTTPSEdge/web/routes/api:create', 'HTTPSEdge/web:update']);
      expect(await remaining(w.client, w.dir, 'stale')).toEqual([]);
    } finally {
      await w.s.stop();
    }
  });

  it('a step that fails on a plan from the kept state is planned again from a full read', async () => {
    const w = await session('retry');
    try {
      // Someone else takes a hostport; then a save gives it to the edge as well.
      await w.client.send('POST', '/edges/https', { hostports: ['taken.retry.example:443'] });
      const mark = w.reports.length;
      const path = join(w.dir, 'https-edge.yaml');
      writeFileSync(path, readFileSync(path, 'utf8').replace(/hostports: \[/, 'hostports: ["taken.retry.example:443", '));
      // The kept state does not have the other edge: the update is tried and refused (409) …
      const failed = await w.waitFor((r): r is Extract<WatchReport, { type: 'run-end' }> => r.type === 'run-end' && r.status === 'retry', mark);
      expect(failed.error).toMatch(/planning again from a full read/);
      // … and the retry plans from a full read; refused again, it waits for the next save.
      const replan = await w.waitFor((r): r is Plan => r.type === 'plan' && r.read.full, mark);
      expect(replan.plan.steps.map((x) => x.id)).toEqual(['HTTPSEdge/web:update']);
      const end = await w.waitFor((r): r is Extract<WatchReport, { type: 'run-end' }> => r.type === 'run-end' && r.status !== 'retry', mark);
      expect(end.status).toBe('invalid');
    } finally {
      await w.s.stop();
    }
  });

  it('a save that creates reads everything first: an object another process made meanwhile is found, not made twice', async () => {
    const w = await session('elsewhere');
    try {
      // Another terminal applies the same new object (through this watch's service, in real use).
      const file = 'kind: FailoverBackend\nname: made-elsewhere\nbackends: ["bkdhr_' + 'e'.repeat(27) + '"]\n';
      const other = tempDir('ep-elsewhere-');
      cpSync(w.dir, other, { recursive: true });
      writeFileSync(join(other, 'elsewhere.yaml'), file);
      await applyDir(w.client, other, 'elsewhere');
      const mark = w.reports.length;
      writeFileSync(join(w.dir, 'elsewhere.yaml'), file);
      const plan = await w.waitFor((r): r is Plan => r.type === 'plan', mark);
      expect(plan.read.full).toBe(true);
      expect(plan.plan.steps).toEqual([]);
      await w.waitFor((r): r is Extract<WatchReport, { type: 'run-end' }> => r.type === 'run-end', mark);
      expect(duplicates(await liveObjects(w.client))).toEqual([]);
      // An edit that creates nothing still re-reads only what it touches.
      const { plan: quiet } = await w.edit('elsewhere.yaml', 'made-elsewhere\n', 'made-elsewhere\ndescription: edited\n');
      expect(quiet.read.full).toBe(false);
      expect(quiet.plan.steps.map((x) => x.id)).toEqual(['FailoverBackend/made-elsewhere:update']);
    } finally {
      await w.s.stop();
    }
  });

  it('an interval run reads everything, so drift on objects no save touched is seen', async () => {
    const w = await session('drift', { intervalMs: 700 });
    try {
      const backend = (await liveObjects(w.client)).find((o) => o.identity === 'drift:FailoverBackend/app')!.id;
      const mark = w.reports.length;
      await w.client.send('PATCH', `/backends/failover/${backend}`, { description: 'drifted' });
      const drift = await w.waitFor((r): r is Plan => r.type === 'plan' && r.mode === 'drift' && r.plan.steps.length > 0, mark);
      expect(drift.read.full).toBe(true);
    } finally {
      await w.s.stop();
    }
  });

  it('with --repair an interval run undoes the drift, reported as a repair', async () => {
    const w = await session('repair', { intervalMs: 700, repair: true });
    try {
      const backend = (await liveObjects(w.client)).find((o) => o.identity === 'repair:FailoverBackend/app')!.id;
      const mark = w.reports.length;
      await w.client.send('PATCH', `/backends/failover/${backend}`, { description: 'drifted' });
      const repair = await w.waitFor((r): r is Plan => r.type === 'plan' && r.mode === 'repair' && r.plan.steps.length > 0, mark);
      expect(repair.plan.steps.map((x) => x.id)).toEqual(['FailoverBackend/app:update']);
      await w.waitFor((r): r is Extract<WatchReport, { type: 'applied' }> => r.type === 'applied', mark);
      expect(await w.client.send('GET', `/backends/failover/${backend}`)).toMatchObject({ description: 'App servers, primary then standby' });
    } finally {
      await w.s.stop();
    }
  });
});

describe('watch --prune', () => {
  it('follows edgeplane.yaml\'s safety settings: an edge protected while watch runs is not pruned', async () => {
    const w = await session('watch-protect', { prune: true, followSafety: true });
    try {
      const edgeId = await routeId(w.client, 'watch-protect:HTTPSEdge/web');
      let mark = w.reports.length;
      writeFileSync(join(w.dir, 'edgeplane.yaml'), 'stack: small-example\nsafety:\n  protect: [HTTPSEdge/web]\n');
      const reloaded = await w.waitFor((r): r is Extract<WatchReport, { type: 'safety-reloaded' }> => r.type === 'safety-reloaded', mark);
      expect(reloaded.protect).toEqual(['HTTPSEdge/web']);
      await w.waitFor((r): r is Extract<WatchReport, { type: 'run-end' }> => r.type === 'run-end', mark);
      await w.s.idle();
      mark = w.reports.length;
      rmSync(join(w.dir, 'https-edge.yaml'));
      const plan = await w.waitFor(w.isPlan, mark);
      await w.waitFor((r): r is Extract<WatchReport, { type: 'run-end' }> => r.type === 'run-end', mark);
      await w.s.idle();
      expect(plan.plan.steps.filter((x) => x.object.identity.startsWith('HTTPSEdge/web') && x.action === 'delete')).toEqual([]);
      expect((await liveObjects(w.client)).some((o) => o.id === edgeId)).toBe(true);
      // A stack file that no longer reads applies nothing (read as the defaults, it would unprotect).
      mark = w.reports.length;
      writeFileSync(join(w.dir, 'edgeplane.yaml'), 'stack: small-example\nsafety:\n  protect: 12\n');
      const broken = await w.waitFor((r): r is Extract<WatchReport, { type: 'run-end' }> => r.type === 'run-end', mark);
      expect(broken.status).toBe('invalid');
      expect(w.reports.slice(mark).some((r) => r.type === 'plan')).toBe(false);
    } finally {
      await w.s.stop();
    }
  });

  it('refuses a run once the directory holds no manifest file (files moved away, a checkout): nothing is deleted', async () => {
    const w = await session('watch-prune-empty', { prune: true });
    try {
      const before = (await liveObjects(w.client)).length;
      expect(before).toBeGreaterThan(0);
      const mark = w.reports.length;
      for (const f of readdirSync(w.dir)) if (f.endsWith('.yaml') && f !== 'edgeplane.yaml') rmSync(join(w.dir, f));
      const end = await w.waitFor((r): r is Extract<WatchReport, { type: 'run-end' }> => r.type === 'run-end', mark);
      await w.s.idle();
      expect(end.status).toBe('invalid');
      expect(end.error).toContain('no manifest files');
      expect(w.reports.slice(mark).some((r) => r.type === 'plan')).toBe(false);
      expect(await liveObjects(w.client)).toHaveLength(before);
    } finally {
      await w.s.stop();
    }
  });
});

describe('watch as files really change on a workstation', () => {
  type End = Extract<WatchReport, { type: 'run-end' }>;
  const isEnd = (r: WatchReport): r is End => r.type === 'run-end';

  it('a directory deleted and made again (a tool regenerating it) is watched again, and its saves applied', async () => {
    const w = await session('regen');
    try {
      const saved = tempDir('ep-regen-');
      cpSync(w.dir, saved, { recursive: true });
      let mark = w.reports.length;
      rmSync(w.dir, { recursive: true, force: true });
      const gone = await w.waitFor((r): r is End => isEnd(r) && /no such directory or file any more; watching for it to come back/.test(r.error ?? ''), mark);
      expect(gone.status).toBe('invalid');
      mark = w.reports.length;
      writeFileSync(join(saved, 'https-edge.yaml'), readFileSync(join(saved, 'https-edge.yaml'), 'utf8').replace('Public site and partner API', 'Regenerated'));
      cpSync(saved, w.dir, { recursive: true });
      const back = await w.waitFor((r): r is Plan => r.type === 'plan' && r.plan.steps.length > 0, mark);
      expect(back.plan.steps.map((x) => x.id)).toEqual(['HTTPSEdge/web:update']);
      await w.waitFor((r): r is End => isEnd(r) && r.status === 'ok', mark);
      await w.s.idle();
      // And later saves in the new directory are seen too.
      const { plan } = await w.edit('https-edge.yaml', 'Regenerated', 'Edited after');
      expect(plan.plan.steps.map((x) => x.id)).toEqual(['HTTPSEdge/web:update']);
      expect(await remaining(w.client, w.dir, 'regen')).toEqual([]);
    } finally {
      await w.s.stop();
    }
  });

  it('a secret file written in two parts around a save is applied once, whole: the run that read half of it waits and sees it change', async () => {
    const w = await session('watch-secret-half');
    let mark = w.reports.length;
    const secret = w.fileSecret('the-first-secret-value\n');
    try {
      await w.upTo((r): r is End => r.type === 'run-end' && r.status === 'ok', mark);
      await new Promise((r) => setTimeout(r, 1200)); // the secret file is old now

      mark = w.reports.length;
      writeFileSync(secret, 'half'); // a generator's first write…
      const fb = join(w.dir, 'failover-backend.yaml');
      writeFileSync(fb, readFileSync(fb, 'utf8') + '# saved meanwhile\n'); // …a save starts a run that reads it…
      await new Promise((r) => setTimeout(r, 300));
      appendFileSync(secret, '-of-the-second-secret-value\n'); // …and the rest comes
      for (let t = 0; t < 200 && !w.reports.slice(mark).some((r) => r.type === 'applied'); t++) await new Promise((r) => setTimeout(r, 25));
      await new Promise((r) => setTimeout(r, 1500)); // any further run the poll starts
      await w.s.idle();
      const applied = w.reports.slice(mark).filter((r): r is Extract<WatchReport, { type: 'applied' }> => r.type === 'applied');
      expect(applied, JSON.stringify(w.reports.slice(mark).map((r) => r.type))).toHaveLength(1);
      expect(w.reports.slice(mark).some((r) => r.type === 'superseded')).toBe(true);
      expect(await remaining(w.client, w.dir, 'watch-secret-half')).toEqual([]);
    } finally {
      rmSync(secret, { force: true });
      await w.s.stop();
    }
  });

  it('a run stopped by a problem with the files (a link to nothing) runs again once it is fixed, with no save', async () => {
    const w = await session('watch-dangling');
    try {
      let mark = w.reports.length;
      symlinkSync(join(w.dir, 'moved-away.yaml'), join(w.dir, 'edge-link.yaml'));
      const fb = join(w.dir, 'failover-backend.yaml');
      writeFileSync(fb, readFileSync(fb, 'utf8') + '# saved\n');
      const stopped = await w.upTo((r): r is End => isEnd(r) && r.status === 'invalid', mark);
      expect(stopped.error).toMatch(/edge-link\.yaml: a symbolic link to .*moved-away\.yaml, which is not there/);
      mark = w.reports.length;
      rmSync(join(w.dir, 'edge-link.yaml')); // no manifest saved: the poll sees the files read otherwise
      expect((await w.upTo(isEnd, mark)).status).toBe('ok');
    } finally {
      await w.s.stop();
    }
  });

  it('tells a valid run\'s warnings when they change (a directory of another stack), and refuses one of this same stack', async () => {
    const w = await session('watch-nested');
    const upTo = w.upTo;
    try {
      const isWarnings = (r: WatchReport): r is Extract<WatchReport, { type: 'warnings' }> => r.type === 'warnings';
      let mark = w.reports.length;
      mkdirSync(join(w.dir, 'eu'));
      writeFileSync(join(w.dir, 'eu', 'edgeplane.yaml'), 'stack: eu\n');
      writeFileSync(join(w.dir, 'eu', 'fb.yaml'), 'kind: FailoverBackend\nname: eu-pool\nbackends: []\n');
      const told = await upTo(isWarnings, mark);
      expect(told.problems.map((p) => `${p.rule}: ${p.message}`)).toEqual(['nested-stack: this directory is stack "eu"\'s (its own edgeplane.yaml): nothing in it is read here; plan it on its own']);
      // The same warnings are not told again at every run.
      mark = w.reports.length;
      await w.edit('failover-backend.yaml', 'App servers, primary then standby', 'Edited while eu/ is there');
      expect(w.reports.slice(mark).some(isWarnings)).toBe(false);
      // The same stack named there: its manifests would be left out, their objects deleted. Refused.
      mark = w.reports.length;
      writeFileSync(join(w.dir, 'eu', 'edgeplane.yaml'), 'stack: watch-nested\n');
      expect((await upTo(isEnd, mark)).status).toBe('invalid');
      expect(JSON.stringify(w.reports.slice(mark))).toContain('naming this same stack');
    } finally {
      await w.s.stop();
    }
  });

  it('a {file} secret is looked at too, outside the directory as well: its creation, change and removal each start a run', async () => {
    const w = await session('watch-secret-file');
    const upTo = w.upTo;
    let mark = w.reports.length;
    const secret = w.fileSecret();
    const name = basename(secret);
    try {
      const missing = await upTo(isEnd, mark);
      expect(missing.status).toBe('invalid');
      expect(JSON.stringify(w.reports.slice(mark))).toContain(`cannot read secret file ../${name}`);

      mark = w.reports.length;
      writeFileSync(secret, 'first-secret-value\n'); // no manifest changes: only the secret file is there now
      const created = await upTo(w.isPlan, mark);
      expect(created.plan.steps.map((x) => x.id)).toEqual([expect.stringMatching(/^HTTPSEdge\/web\/routes\/site:/)]);
      expect((await upTo(isEnd, mark)).status).toBe('ok');

      mark = w.reports.length;
      writeFileSync(secret, 'second-secret-value\n');
      const changed = await upTo(w.isPlan, mark);
      expect(changed.plan.steps.map((x) => x.id)).toEqual([expect.stringMatching(/^HTTPSEdge\/web\/routes\/site:/)]);
      expect(JSON.stringify(changed.plan.steps[0].changes)).toContain('client_secret');
      expect((await upTo(isEnd, mark)).status).toBe('ok');
      expect(await remaining(w.client, w.dir, 'watch-secret-file')).toEqual([]);

      mark = w.reports.length;
      rmSync(secret);
      expect((await upTo(isEnd, mark)).status).toBe('invalid');
    } finally {
      rmSync(secret, { force: true });
      await w.s.stop();
    }
  });

  it('a watched symbolic link pointed at another directory is followed there (no file event says so)', async () => {
    const client = await clientFor(svc);
    const a = copyExample('small');
    const b = tempDir('ep-link-b-');
    cpSync(a, b, { recursive: true });
    writeFileSync(join(b, 'https-edge.yaml'), readFileSync(join(b, 'https-edge.yaml'), 'utf8').replace('Public site and partner API', 'From b'));
    const link = join(tempDir('ep-link-'), 'edge');
    symlinkSync(a, link);
    const reports: WatchReport[] = [];
    const s = startWatchSession({ input: { root: link, stack: 'relink', env: {} }, client, debounceMs: 30, stableMs: 30, report: (r) => reports.push(r) });
    try {
      await s.ready;
      const until = async (pred: (r: WatchReport) => boolean, from: number) => {
        for (let t = 0; t < 400 && !reports.slice(from).some(pred); t++) await new Promise((r) => setTimeout(r, 25));
        return reports.slice(from).find(pred);
      };
      expect(await until((r) => r.type === 'run-end' && r.status === 'ok', 0)).toBeDefined();
      await s.idle();
      const mark = reports.length;
      rmSync(link);
      symlinkSync(b, link);
      const plan = await until((r) => r.type === 'plan' && r.plan.steps.length > 0, mark) as Plan | undefined;
      expect(plan?.plan.steps.map((x) => x.id)).toEqual(['HTTPSEdge/web:update']);
      await until((r) => r.type === 'run-end', mark);
      await s.idle();
      // Saves in the new target are seen.
      const next = reports.length;
      writeFileSync(join(b, 'https-edge.yaml'), readFileSync(join(b, 'https-edge.yaml'), 'utf8').replace('From b', 'Edited in b'));
      const edited = await until((r) => r.type === 'plan' && r.plan.steps.length > 0, next) as Plan | undefined;
      expect(edited?.plan.steps.map((x) => x.id)).toEqual(['HTTPSEdge/web:update']);
    } finally {
      await s.stop();
    }
  });

  it('with --prune, a file read while a generator was still writing it (empty for a moment) deletes nothing', async () => {
    const w = await session('halfway', { prune: true, confirmDestructiveMs: 400 });
    try {
      const before = await liveObjects(w.client);
      const path = join(w.dir, 'https-edge.yaml');
      const text = readFileSync(path, 'utf8');
      const mark = w.reports.length;
      writeFileSync(path, ''); // `cmd > https-edge.yaml`: the shell truncates first …
      await new Promise((r) => setTimeout(r, 150));
      writeFileSync(path, text); // … and the command writes a moment later
      await w.waitFor((r): r is Extract<WatchReport, { type: 'superseded' }> => r.type === 'superseded', mark);
      await new Promise((r) => setTimeout(r, 300));
      await w.s.idle();
      expect(w.reports.slice(mark).filter((r) => r.type === 'step')).toEqual([]);
      expect(await liveObjects(w.client)).toEqual(before);
    } finally {
      await w.s.stop();
    }
  });

  it('a file read while a generator was still writing it removes no module (a route left without its login for a moment)', async () => {
    const w = await session('halfmodule', { confirmDestructiveMs: 400 });
    try {
      const before = await liveObjects(w.client);
      const path = join(w.dir, 'https-edge.yaml');
      const text = readFileSync(path, 'utf8');
      const cut = text.lastIndexOf('    circuit_breaker:');
      expect(cut).toBeGreaterThan(0);
      const mark = w.reports.length;
      writeFileSync(path, text.slice(0, cut)); // written up to the api route's last module …
      await new Promise((r) => setTimeout(r, 150));
      writeFileSync(path, text); // … and the rest a moment later
      await w.waitFor((r): r is Extract<WatchReport, { type: 'superseded' }> => r.type === 'superseded', mark);
      await new Promise((r) => setTimeout(r, 300));
      await w.s.idle();
      expect(w.reports.slice(mark).filter((r) => r.type === 'step')).toEqual([]);
      expect(await liveObjects(w.client)).toEqual(before);
    } finally {
      await w.s.stop();
    }
  });

  it('edgeplane.yaml naming another stack mid-session applies nothing and says to restart', async () => {
    const w = await session('stackfile');
    try {
      const mark = w.reports.length;
      writeFileSync(join(w.dir, 'edgeplane.yaml'), 'stack: renamed-stack\n');
      const end = await w.waitFor((r): r is End => isEnd(r) && r.status === 'invalid', mark);
      expect(end.error).toContain('edgeplane.yaml now names stack "renamed-stack"');
      expect(w.reports.slice(mark).filter((r) => r.type === 'plan')).toEqual([]);
    } finally {
      await w.s.stop();
    }
  });
});

/** Every file's documents and load problems, one list each, as a run reads them. */
function loaded(cache: ManifestCache, dir: string) {
  const files = cache.loadFiles(dir);
  return { docs: files.flatMap((f) => f.docs), problems: files.flatMap((f) => f.problems) };
}

describe('ManifestCache.changedSinceLoad', () => {
  it('tells whether a file was edited, added or removed since it was read', () => {
    const dir = copyExample('small');
    const cache = new ManifestCache();
    loaded(cache, dir);
    expect(cache.changedSinceLoad(dir)).toBe(false);
    const file = join(dir, 'failover-backend.yaml');
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text + '\n# a comment\n');
    expect(cache.changedSinceLoad(dir)).toBe(true);
    loaded(cache, dir);
    expect(cache.changedSinceLoad(dir)).toBe(false);
    writeFileSync(join(dir, 'more.yaml'), 'kind: FailoverBackend\nname: more\nbackends: []\n');
    expect(cache.changedSinceLoad(dir)).toBe(true);
  });
});

describe('ManifestCache.loadFiles', () => {
  it('parses a file again when its bytes change, even where the text read as UTF-8 would not (one invalid byte for another)', () => {
    const dir = copyExample('small');
    const cache = new ManifestCache();
    const file = join(dir, 'failover-backend.yaml');
    const text = readFileSync(file, 'utf8');
    const at = text.indexOf('App servers');
    const withByte = (b: number) => Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from([b]), Buffer.from(text.slice(at))]);
    writeFileSync(file, withByte(0xe9)); // Latin-1 é
    const first = loaded(cache, dir).problems.filter((p) => p.rule === 'encoding');
    expect(first).toHaveLength(1);
    writeFileSync(file, withByte(0xff)); // another byte that is not UTF-8: the same text once decoded
    expect(cache.changedSinceLoad(dir)).toBe(true);
    expect(loaded(cache, dir).problems.filter((p) => p.rule === 'encoding')).toHaveLength(1);
    writeFileSync(file, text);
    expect(cache.changedSinceLoad(dir)).toBe(true);
    const fixed = loaded(cache, dir);
    expect(fixed.problems).toEqual([]);
    expect(fixed.docs.some((d) => (d.value as { kind?: string }).kind === 'FailoverBackend')).toBe(true);
  });

  it('keeps the documents a save left as they were (the same text on the same line), and no other', () => {
    const dir = tempDir();
    const file = join(dir, 'pools.yaml');
    const doc = (name: string, description: string) => `kind: FailoverBackend\nname: ${name}\ndescription: ${description}\nbackends: []\n`;
    writeFileSync(file, [doc('a', 'one'), doc('b', 'one'), doc('c', 'one')].join('---\n'));
    const cache = new ManifestCache();
    const [a, b, c] = loaded(cache, dir).docs;
    // b edited on its own line: a and c are what was read before.
    writeFileSync(file, [doc('a', 'one'), doc('b', 'two'), doc('c', 'one')].join('---\n'));
    const second = loaded(cache, dir).docs;
    expect(second[0]).toBe(a);
    expect(second[1]).not.toBe(b);
    expect(second[2]).toBe(c);
    // A line added in a: b and c read the same but stand a line lower (their positions moved).
    writeFileSync(file, [doc('a', 'one\n# moved'), doc('b', 'two'), doc('c', 'one')].join('---\n'));
    const third = loaded(cache, dir).docs;
    expect(third.some((d) => second.includes(d))).toBe(false);
    expect(third[2].locate(['name']).line).toBe(second[2].locate(['name']).line + 1);
  });
});
