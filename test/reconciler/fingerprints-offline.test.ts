import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderJson } from '../../src/reconciler/render/json.js';
import { decodeMetadata, fingerprintSecret } from '../../src/reconciler/ownership/marker.js';
import { readLiveState } from '../../src/reconciler/state/read-state.js';
import { KeyRing } from '../../src/service/writes/sealing.js';
import { applyDir, cleanupDirs, clientFor, manifestDir, prepare } from '../helpers/reconcile.js';
import { ENGINES, startTestService, type TestService } from '../helpers/service.js';

const WEAK = 'password1';

const MANIFEST = (host: string) => `kind: HTTPSEdge
name: web
hostports: [${host}:443]
routes:
  - name: hook
    match_type: path_prefix
    match: /hook
    webhook_verification:
      provider: github
      secret: {env: WEAK_HOOK}
  - name: login
    match_type: path_prefix
    match: /login
    oidc:
      issuer: https://accounts.example.com
      client_id: web
      client_secret: {env: WEAK_OIDC}
`;

/** Every string in a value read from the API, metadata parsed as well. */
function strings(v: unknown, out: Set<string> = new Set()): Set<string> {
  if (typeof v === 'string') {
    out.add(v);
    if (v.startsWith('{')) try { strings(JSON.parse(v), out); } catch { /* not JSON */ }
  } else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) { out.add(k); strings(x, out); }
  return out;
}

/**
 * What a reader with the objects in hand can compute from a guess, offline: the guess itself, its
 * plain hashes, the reconciler's former fingerprint (keyed by stack, identity and field, all in the
 * marker), and an HMAC of it under every string read (as key), in the encodings fingerprints use.
 */
function guessesMatch(read: Set<string>, markers: { stack: string; id: string; fp?: Record<string, string> }[], guess: string): string[] {
  const hits: string[] = [];
  const forms = (d: Buffer) => [d.toString('hex'), d.toString('base64'), d.toString('base64url'), d.toString('base64url').slice(0, 22)];
  const candidates = new Set<string>([guess, ...forms(createHash('sha256').update(guess).digest())]);
  for (const m of markers) for (const path of Object.keys(m.fp ?? {})) candidates.add(fingerprintSecret(m.stack, m.id, path, guess));
  for (const key of read) for (const f of forms(createHmac('sha256', key).update(guess).digest())) candidates.add(f);
  for (const value of read) {
    const bare = value.startsWith('k:') ? value.slice(2) : value;
    if (candidates.has(value) || candidates.has(bare)) hits.push(value);
  }
  return hits;
}

describe.each(ENGINES)('secret fingerprints cannot be tested offline (%s)', (engine) => {
  let svc: TestService;
  beforeAll(async () => { svc = await startTestService(engine, { secrets: new KeyRing([{ id: 'k1', key: Buffer.alloc(32, 7) }]) }); }, 60_000);
  afterAll(async () => { await svc?.close(); cleanupDirs(); });

  it('a reader of every object of the account, and of the plan, finds no match for the planted weak secret', async () => {
    const client = await clientFor(svc);
    const dir = manifestDir({ 'web.yaml': MANIFEST(`fp-${engine}-${Date.now()}.example.com`) });
    const env = { WEAK_HOOK: WEAK, WEAK_OIDC: WEAK };
    await applyDir(client, dir, 'prod', env);
    // Unchanged secrets are still recognised: the next plan is empty.
    const again = await prepare(client, dir, 'prod', env);
    expect(again.plan!.steps).toEqual([]);
    // A changed one is not.
    const changed = await prepare(client, dir, 'prod', { ...env, WEAK_OIDC: 'password2' });
    expect(changed.plan!.steps.map((s) => s.object.identity)).toEqual(['HTTPSEdge/web/routes/login']);

    const lists = await readLiveState(client);
    const read = strings(lists);
    // Each route, module by module, as a GET gives it, too.
    for (const edge of lists.https_edges ?? []) strings((await client.getObject(`/edges/https/${edge.id}`)), read);
    strings(renderJson(changed.plan!), read);
    const markers = [...read].map((s) => decodeMetadata(s).marker).filter((m) => m !== undefined);
    expect(markers.filter((m) => m.fp && Object.keys(m.fp).length).length).toBeGreaterThanOrEqual(2);
    expect(guessesMatch(read, markers, WEAK)).toEqual([]);

    // The same reader, given markers fingerprinted the former way (keyed by what the marker shows), finds the secret.
    const former = markers.map((m) => ({ ...m, fp: Object.fromEntries(Object.keys(m.fp ?? {}).map((p) => [p, fingerprintSecret(m.stack, m.id, p, WEAK)])) }));
    const formerRead = new Set([...read, ...former.flatMap((m) => Object.values(m.fp))]);
    expect(guessesMatch(formerRead, former, WEAK).length).toBeGreaterThanOrEqual(2);
  });
});
