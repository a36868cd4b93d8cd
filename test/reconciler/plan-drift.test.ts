import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/client/api-client.js';
import { runObjects } from '../../src/reconciler/apply/run-record.js';
import { appliedHashes, decodeMetadata, encodeMetadata, parseHashes } from '../../src/reconciler/ownership/marker.js';
import { applyDir, cleanupDirs, clientFor, manifestDir, prepare } from '../helpers/reconcile.js';
import { startTestService, type TestService } from '../helpers/service.js';

const CERTS = join(import.meta.dirname, '..', 'fixtures', 'certs');
const pem = (f: string) => readFileSync(join(CERTS, f), 'utf8').trim().split('\n').map((l) => `  ${l}`).join('\n');

let svc: TestService;
beforeAll(async () => { svc = await startTestService('pglite'); });
afterAll(async () => { await svc?.close(); cleanupDirs(); });

const STACK = 'drift';
const pools = (description: string, metadata = '') => `kind: FailoverBackend
name: pool
description: ${description}
backends: []
${metadata ? `metadata: ${JSON.stringify(metadata)}\n` : ''}---
kind: FailoverBackend
name: front
backends: [pool]
`;

async function live(client: ApiClient, name: string): Promise<{ id: string; metadata: string }> {
  const list = (await client.send('GET', '/backends/failover')) as { backends: { id: string; metadata: string }[] };
  return list.backends.find((b) => decodeMetadata(b.metadata).marker?.id === `FailoverBackend/${name}`)!;
}

describe('drift: what the ownership marker records of the last apply', () => {
  it('a value changed through the API is drift; the same field changed in the manifests too is not', async () => {
    const client = await clientFor(svc);
    const dir = manifestDir({ 'pools.yaml': pools('first') });
    await applyDir(client, dir, STACK);
    const pool = await live(client, 'pool');
    // The marker holds a hash per field the stack wrote, never a value.
    const h = parseHashes(decodeMetadata(pool.metadata).marker!.h)!;
    expect([...h.keys()]).toEqual(['backends', 'description']);
    expect(pool.metadata).not.toContain('first');

    await client.send('PATCH', `/backends/failover/${pool.id}`, { description: 'by hand' });
    const drifted = (await prepare(client, dir, STACK)).plan!;
    expect(drifted.steps).toHaveLength(1);
    expect(drifted.steps[0]).toMatchObject({ id: 'FailoverBackend/pool:update', drift: true, changes: [{ path: 'description', before: 'by hand', after: 'first', drift: true }] });
    // The sync record says so too (the status page marks the object Drifted, not Not applied).
    expect(runObjects(drifted)).toEqual([{ identity: 'FailoverBackend/pool', action: 'update', fields: ['description'], drift: true }]);

    // The manifests change the same field: a manifest change, whatever the live value.
    writeFileSync(join(dir, 'pools.yaml'), pools('second'));
    const changed = (await prepare(client, dir, STACK)).plan!;
    expect(changed.steps[0].changes).toEqual([{ path: 'description', before: 'by hand', after: 'second' }]);
    expect(changed.steps[0].drift).toBeUndefined();
    expect(runObjects(changed)).toEqual([{ identity: 'FailoverBackend/pool', action: 'update', fields: ['description'], drift: false }]);
  });

  it('the user\'s own metadata changed by hand is drift; a marker with no hashes (written before them) marks nothing and makes no step', async () => {
    const client = await clientFor(svc);
    const dir = manifestDir({ 'pools.yaml': pools('x', 'team: edge') });
    await applyDir(client, dir, STACK);
    const pool = await live(client, 'pool');
    const { marker, user } = decodeMetadata(pool.metadata);
    expect(user).toBe('team: edge');
    await client.send('PATCH', `/backends/failover/${pool.id}`, { metadata: encodeMetadata(marker!, 'team: other') });
    const plan = (await prepare(client, dir, STACK)).plan!;
    expect(plan.steps[0].changes).toEqual([{ path: 'metadata', before: 'team: other', after: 'team: edge', drift: true }]);

    // The marker as an earlier release wrote it: the same objects plan no changes.
    const { h: _h, ...old } = marker!;
    await client.send('PATCH', `/backends/failover/${pool.id}`, { metadata: encodeMetadata(old, 'team: edge') });
    expect((await prepare(client, dir, STACK)).plan!.steps).toEqual([]);
    // A change by hand then is not named drift (nothing to tell it by); the apply records the hashes.
    await client.send('PATCH', `/backends/failover/${pool.id}`, { description: 'by hand' });
    const unknown = (await prepare(client, dir, STACK)).plan!;
    expect(unknown.steps[0].drift).toBeUndefined();
    expect(unknown.steps[0].changes).toEqual([{ path: 'description', before: 'by hand', after: 'x' }]);
    await applyDir(client, dir, STACK);
    expect(decodeMetadata((await live(client, 'pool')).metadata).marker!.h).toBe(marker!.h);
  });

  it('a CA replaced moves the edges that use it: the plan\'s own change, not drift', async () => {
    const client = await clientFor(svc);
    const manifest = (file: string) => `kind: CertificateAuthority\nname: clients\nca_pem: |\n${pem(file)}\n---\nkind: HTTPSEdge\nname: mtls\nhostports: ["mtls-drift.example.test:443"]\nmutual_tls:\n  certificate_authority_ids: [clients]\n`;
    const dir = manifestDir({ 'ca.yaml': manifest('rsa-ca.pem') });
    await applyDir(client, dir, STACK);
    writeFileSync(join(dir, 'ca.yaml'), manifest('rsa-ca-2.pem'));
    const plan = (await prepare(client, dir, STACK)).plan!;
    const edge = plan.steps.find((s) => s.object.identity === 'HTTPSEdge/mtls')!;
    expect(edge.changes.map((c) => c.path)).toEqual(['mutual_tls.certificate_authority_ids']);
    expect(plan.steps.some((s) => s.drift)).toBe(false);
  });

  it('hashes: by name, secrets by their fingerprints only, and left out where the metadata has no room', async () => {
    const secret = { $secret: { env: 'TOKEN' }, fingerprint: 'fp1' };
    expect(appliedHashes({ a: 1, b: undefined, oidc: { client_secret: secret } })).toMatch(/^a=[\w-]{8};oidc=[\w-]{8}$/);
    // Another source of the same secret value (same fingerprint) hashes alike.
    expect(appliedHashes({ oidc: { client_secret: { ...secret, $secret: { file: 'x' } } } })).toBe(appliedHashes({ oidc: { client_secret: secret } }));
    expect(parseHashes(undefined)).toBeUndefined();
    expect(parseHashes('a=x;b=y')).toEqual(new Map([['a', 'x'], ['b', 'y']]));

    const client = await clientFor(svc);
    // User metadata that leaves too little room for the hashes: applied without them, no error.
    const big = 'x'.repeat(3_990);
    const dir = manifestDir({ 'pools.yaml': pools('big', big) });
    await applyDir(client, dir, STACK);
    const pool = await live(client, 'pool');
    expect(decodeMetadata(pool.metadata).marker!.h).toBeUndefined();
    expect((await prepare(client, dir, STACK)).plan!.steps).toEqual([]);
  });
});
