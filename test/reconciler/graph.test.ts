import { afterAll, describe, expect, it } from 'vitest';
import { graph } from '../../src/cli/commands/graph.js';
import { EXIT } from '../../src/cli/exit.js';
import { capture, exitCode } from '../helpers/capture.js';
import { runCli } from '../helpers/cli.js';
import { cleanupDirs, manifestDir } from '../helpers/reconcile.js';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

afterAll(() => cleanupDirs());

const CA = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'certs', 'rsa-ca.pem'), 'utf8');
const RAW = 'bkdhr_000000000000000000000000001';
const files = {
  'edgeplane.yaml': 'stack: shop\n',
  'ca.yaml': `kind: CertificateAuthority\nname: clients\nca_pem: |\n${CA.replace(/^/gm, '  ')}`,
  'backends.yaml': `kind: FailoverBackend\nname: pool\nbackends: ["${RAW}", spare]\n---\nkind: FailoverBackend\nname: spare\nbackends: []\n`,
  'edge.yaml': [
    'kind: HTTPSEdge', 'name: web', 'hostports: ["web.example.com:443"]',
    'mutual_tls: {certificate_authority_ids: [clients]}',
    'routes:',
    '  - {name: site, match_type: path_prefix, match: /, backend: {backend_id: pool}}',
    '  - {name: api, match_type: path_prefix, match: /api, backend: {backend_id: spare}}', '',
  ].join('\n'),
};

const MERMAID = `flowchart LR
  %% edgeplane stack shop
  n0["CertificateAuthority/clients"]
  n1["FailoverBackend/pool"]
  n2["FailoverBackend/spare"]
  n3["HTTPSEdge/web"]
  n4["HTTPSEdge/web/routes/api"]
  n5["HTTPSEdge/web/routes/site"]
  n6["${RAW} (not in the manifests)"]
  n1 -->|"backends"| n2
  n1 -->|"backends"| n6
  n3 -->|"mutual_tls.certificate_authority_ids"| n0
  n3 -->|"routes"| n4
  n3 -->|"routes"| n5
  n4 -->|"backend.backend_id"| n2
  n5 -->|"backend.backend_id"| n1
  classDef external stroke-dasharray: 4 4
  class n6 external`;

describe('edgeplane graph', () => {
  it('Mermaid: edges → routes → backends, failover children, edges → the CAs of their mutual TLS; raw ids marked', async () => {
    const out = capture();
    await graph(out, manifestDir(files), {});
    expect(out.text()).toBe(MERMAID);
  });

  it('the same manifests in other files and another order give the same text', async () => {
    const out = capture();
    const { 'edge.yaml': edge, 'backends.yaml': backends, ...rest } = files;
    const [pool, spare] = backends.split('---\n');
    await graph(out, manifestDir({ 'z/all.yaml': `${edge}---\n${spare}---\n${pool}`, ...rest }), {});
    expect(out.text()).toBe(MERMAID);
  });

  it('DOT for Graphviz: the same nodes and edges, quoted', async () => {
    const out = capture();
    await graph(out, manifestDir(files), { format: 'dot' });
    const text = out.text();
    expect(text.split('\n').slice(0, 4)).toEqual(['digraph "edgeplane stack shop" {', '  rankdir=LR;', '  node [shape=box];', '  "CertificateAuthority/clients";']);
    expect(text).toContain(`  "${RAW}" [style=dashed, tooltip="failoverBackend, not in the manifests"];`);
    expect(text).toContain('  "HTTPSEdge/web" -> "CertificateAuthority/clients" [label="mutual_tls.certificate_authority_ids"];');
    expect(text).toContain('  "HTTPSEdge/web/routes/site" -> "FailoverBackend/pool" [label="backend.backend_id"];');
    expect(text.split('\n').filter((l) => l.includes(' -> '))).toHaveLength(7);
    expect(text.endsWith('}')).toBe(true);
  });

  it('manifests that do not validate: their problems, exit 1, no graph', async () => {
    const out = capture();
    const dir = manifestDir({ ...files, 'bad.yaml': 'kind: FailoverBackend\nname: lost\nbackends: [nowhere]\n' });
    expect(await exitCode(() => graph(out, dir, {}))).toBe(EXIT.error);
    expect(out.errors.join('\n')).toMatch(/bad\.yaml:3:\d+: error: backends\[0\]: no FailoverBackend named "nowhere"/);
    expect(out.text()).toBe('');
  });

  it('one file of a stack is refused with the directory to give, not drawn with its references unresolved', async () => {
    const dir = manifestDir(files);
    const out = capture();
    await expect(graph(out, join(dir, 'edge.yaml'), {})).rejects.toThrow(`${join(dir, 'edge.yaml')} is a file: graph draws a stack from the directory of its manifests; give the directory that holds it (${dir})`);
    expect(out.errors).toEqual([]);
    expect(out.text()).toBe('');
  });

  it('as a command: no service is opened (no state directory is made), and an unknown format is refused', async () => {
    const dir = manifestDir(files);
    const cwd = manifestDir({});
    const r = await runCli(['graph', dir, '--format', 'dot'], { cwd });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('digraph "edgeplane stack shop" {');
    expect(readdirSync(cwd)).toEqual([]);
    const bad = await runCli(['graph', dir, '--format', 'svg'], { cwd });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("argument 'svg' is invalid. Allowed choices are mermaid, dot");
  });
});
