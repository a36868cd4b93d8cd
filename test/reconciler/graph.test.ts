import { afterAll, describe, expect, it } from 'vitest';
import { graph } from '../../src/cli/commands/graph.js';
import { mermaidTooBig } from '../../src/reconciler/graph/graph.js';
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

  it('--target: the objects selected, those under them and what they refer to, through others too; nothing else', async () => {
    const dir = manifestDir(files);
    const drawn = async (...targets: string[]) => {
      const out = capture();
      await graph(out, dir, { target: targets });
      return out.text().split('\n').filter((l) => /^  n\d+\[/.test(l)).map((l) => /\["(.*)"\]/.exec(l)![1]);
    };
    // A route: it, its backend (spare); not its edge, nor the other route.
    expect(await drawn('HTTPSEdge/web/routes/api')).toEqual(['FailoverBackend/spare', 'HTTPSEdge/web/routes/api']);
    // A failover backend: its children, raw or described.
    expect(await drawn('FailoverBackend/pool')).toEqual(['FailoverBackend/pool', 'FailoverBackend/spare', `${RAW} (not in the manifests)`]);
    // An edge: its routes and all they use.
    expect(await drawn('HTTPSEdge/web')).toHaveLength(7);
    // Globs and several selectors, as plan takes them.
    expect(await drawn('FailoverBackend/sp*', 'CertificateAuthority/clients')).toEqual(['CertificateAuthority/clients', 'FailoverBackend/spare']);
    const out = capture();
    await graph(out, dir, { target: ['HTTPSEdge/web/routes/api'], format: 'dot' });
    expect(out.text()).toContain('digraph "edgeplane stack shop, --target HTTPSEdge/web/routes/api" {');
    expect(out.text().split('\n').filter((l) => l.includes(' -> '))).toEqual(['  "HTTPSEdge/web/routes/api" -> "FailoverBackend/spare" [label="backend.backend_id"];']);
  });

  it('--target naming nothing: exit 1 with the nearest names', async () => {
    const out = capture();
    const dir = manifestDir(files);
    await expect(graph(out, dir, { target: ['HTTPSEdge/wbe'] })).rejects.toThrow('error: --target HTTPSEdge/wbe names no object of this stack (nearest: HTTPSEdge/web');
    expect(out.text()).toBe('');
  });

  it('a chart GitHub would not render (over 500 arrows): printed, with a warning that names --target and DOT', async () => {
    const edges = Array.from({ length: 130 }, (_, i) => [
      `kind: HTTPSEdge`, `name: e${i}`, `hostports: ["e${i}.example.com:443"]`, 'routes:',
      `  - {name: a, match_type: path_prefix, match: /, backend: {backend_id: pool}}`,
      `  - {name: b, match_type: path_prefix, match: /b, backend: {backend_id: spare}}`, '',
    ].join('\n')).join('---\n');
    const dir = manifestDir({ ...files, 'many.yaml': edges });
    const out = capture();
    await graph(out, dir, {});
    expect(out.text().split('\n').filter((l) => l.includes('-->'))).toHaveLength(7 + 130 * 4);
    expect(out.errors).toEqual([
      "warning: this Mermaid chart has 527 arrows (GitHub renders at most 500): GitHub will not render it. Draw part of the stack with --target (--target HTTPSEdge/e0, or a glob such as 'HTTPSEdge/e0*'), or all of it with --format dot (Graphviz)",
    ]);
    // Characters count too, arrows or not.
    const long = { stack: 's', nodes: [{ id: 'FailoverBackend/pool', kind: 'FailoverBackend' }], edges: [] };
    expect(mermaidTooBig(long, 'x'.repeat(50_000))).toBeUndefined();
    expect(mermaidTooBig(long, 'x'.repeat(50_001))).toMatch(/^this Mermaid chart has 50,001 characters \(at most 50,000\): GitHub will not render it\. Draw part of the stack with --target \(--target FailoverBackend\/pool/);
    // Within the limits with --target, and DOT has none.
    const part = capture();
    await graph(part, dir, { target: ['HTTPSEdge/e1*'] });
    expect(part.errors).toEqual([]);
    const dot = capture();
    await graph(dot, dir, { format: 'dot' });
    expect(dot.errors).toEqual([]);
  });

  it('as a command: --target is taken, repeated', async () => {
    const r = await runCli(['graph', manifestDir(files), '--target', 'FailoverBackend/spare', '--target', 'CertificateAuthority/clients']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('%% edgeplane stack shop, --target FailoverBackend/spare CertificateAuthority/clients');
    expect(r.stdout.split('\n').filter((l) => /^  n\d+\[/.test(l))).toHaveLength(2);
  });
});
