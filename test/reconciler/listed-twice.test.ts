import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { KINDS } from '../../src/kinds/registry.js';
import { preparePlan } from '../../src/reconciler/plan/prepare.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';
import { expandObserved } from '../helpers/scenario.js';

/**
 * A list that hands one object twice (on two pages: an API, proxy or mirror that repeats one)
 * plans as if it were listed once: the manifest object takes it, and it is not also deleted as a
 * duplicate of itself (`Matched.claimed` answers by id too). Fake lists, one object per page.
 */
const BASE = 'https://api.example.test';
function transport(lists: Record<string, unknown[]>, pageSize: number) {
  return {
    target: BASE,
    async request(_method: string, path: string) {
      const url = new URL(path, BASE);
      const kind = KINDS.find((k) => k.listKey && !k.parent && url.pathname === new URL(k.path, BASE).pathname)!;
      const items = lists[kind.listKey!] ?? [];
      const page = Number(url.searchParams.get('page') ?? 0);
      const more = (page + 1) * pageSize < items.length;
      return {
        status: 200, headers: {},
        body: {
          [kind.listKey!]: structuredClone(items.slice(page * pageSize, (page + 1) * pageSize)), uri: url.href,
          next_page_uri: more ? `${BASE}${url.pathname}?page=${page + 1}` : null,
        },
      };
    },
    async close() {},
  };
}

const CERTS = join(import.meta.dirname, '..', 'fixtures', 'certs');
afterAll(cleanupDirs);

async function plan(files: Record<string, string>, observed: Record<string, unknown[]>, pageSize: number) {
  const dir = manifestDir(files);
  const client = new ApiClient(transport(expandObserved(observed as never, 'prod') as never, pageSize));
  const p = await preparePlan({ root: dir, cwd: dir, stack: 'prod', env: {} }, client);
  return p.plan!;
}

it('a CA listed on two pages is kept, not deleted as a duplicate of itself', async () => {
  const pem = (await import('node:fs')).readFileSync(join(CERTS, 'rsa-ca.pem'), 'utf8');
  const ca = { id: 'ca_000000000000000000000000001', $pem: 'rsa-ca.pem', $marker: { id: 'CertificateAuthority/root' } };
  const p = await plan(
    { 'edgeplane.yaml': 'stack: prod\n', 'all.yaml': `kind: CertificateAuthority\nname: root\nca_pem: |\n${pem.trim().split('\n').map((l) => `  ${l}`).join('\n')}\n` },
    { certificate_authorities: [ca, ca] }, 1,
  );
  expect(p.steps.map((s) => `${s.action} ${s.object.id}`)).toEqual([]);
});

it('an edge listed on two pages (with its route) is kept, not deleted with its routes', async () => {
  const route = { id: 'edghtsrt_000000000000000000000000001', edge_id: null, match_type: 'path_prefix', match: '/', $marker: { id: 'HTTPSEdge/web/routes/site' } };
  const edge = { id: 'edghts_000000000000000000000000001', hostports: ['example.com:443'], routes: [route], $marker: { id: 'HTTPSEdge/web' } };
  const p = await plan(
    { 'edgeplane.yaml': 'stack: prod\n', 'all.yaml': 'kind: HTTPSEdge\nname: web\nhostports: ["example.com:443"]\nroutes:\n  - name: site\n    match_type: path_prefix\n    match: /\n' },
    { https_edges: [edge, edge] }, 1,
  );
  expect(p.steps.map((s) => `${s.action} ${s.object.id}`)).toEqual([]);
});

it('an object listed three times that the manifests no longer have is deleted once, after the edge that refers to it', async () => {
  const ca = { id: 'ca_000000000000000000000000001', $pem: 'rsa-ca.pem', $marker: { id: 'CertificateAuthority/root' } };
  const edge = {
    id: 'edghts_000000000000000000000000001', hostports: [], routes: [], $marker: { id: 'HTTPSEdge/web' },
    mutual_tls: { enabled: true, certificate_authorities: [{ id: ca.id, uri: `${BASE}/certificate_authorities/${ca.id}` }] },
  };
  for (const destroy of [false, true]) {
    const dir = manifestDir({ 'edgeplane.yaml': 'stack: prod\n', 'all.yaml': 'kind: FailoverBackend\nname: x\nbackends: []\n' });
    const client = new ApiClient(transport(expandObserved({ certificate_authorities: [ca, ca, ca], https_edges: [edge] } as never, 'prod') as never, 1));
    const p = (await preparePlan({ root: dir, cwd: dir, stack: 'prod', env: {}, destroy }, client)).plan!;
    const deletes = p.steps.filter((s) => s.action === 'delete');
    expect(deletes.map((s) => `${s.object.identity} ${s.object.id}`)).toEqual([`HTTPSEdge/web ${edge.id}`, `CertificateAuthority/root ${ca.id}`]);
    expect(deletes[1].dependsOn).toContain(deletes[0].id);
  }
});

