import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';

export interface BenchSize { edges: number; routesPerEdge: number; cas: number; backends: number }
export const FULL: BenchSize = { edges: 1000, routesPerEdge: 5, cas: 100, backends: 100 };

/** Objects the manifests describe (routes counted one by one). */
export function objectCount(s: BenchSize): number {
  return s.edges * (1 + s.routesPerEdge) + s.cas + s.backends;
}

const foreign = (i: number) => `bkdhr_${String(i).padStart(27, '0')}`;

/**
 * The benchmark's manifests: CAs, failover backends (half of them chained to another by name),
 * edges with mutual TLS naming two CAs, five routes each with a backend and a mix of modules.
 * Ten edge files of 100 edges, as a team would split them. `tag` keeps hostports unique.
 */
export function writeManifests(dir: string, size: BenchSize, caPems: string[], tag: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'edgeplane.yaml'), 'stack: bench\n');
  writeFileSync(join(dir, 'certificate-authorities.yaml'), caPems.slice(0, size.cas).map((pem, i) =>
    stringify({ kind: 'CertificateAuthority', name: `ca-${i}`, description: `bench CA ${i}`, ca_pem: pem })).join('---\n'));
  writeFileSync(join(dir, 'failover-backends.yaml'), Array.from({ length: size.backends }, (_, i) =>
    stringify({ kind: 'FailoverBackend', name: `pool-${i}`, backends: i % 2 && i > 0 ? [foreign(i), `pool-${i - 1}`] : [foreign(i)] })).join('---\n'));
  const perFile = 100;
  for (let f = 0; f * perFile < size.edges; f++) {
    const docs: string[] = [];
    for (let e = f * perFile; e < Math.min(size.edges, (f + 1) * perFile); e++) {
      const routes = Array.from({ length: size.routesPerEdge }, (_, r) => {
        const route: Record<string, unknown> = { name: `r${r}`, match_type: 'path_prefix', match: r ? `/p${r}/` : '/', backend: { backend_id: `pool-${(e + r) % size.backends}` } };
        if (r % 2 === 1) route.compression = {};
        if (r === 2) route.request_headers = { add: { 'x-edge': `e${e}` }, remove: ['x-debug'] };
        if (r === 3) route.circuit_breaker = { error_threshold_percentage: 0.25 };
        return route;
      });
      docs.push(stringify({
        kind: 'HTTPSEdge', name: `edge-${e}`, description: `bench edge ${e}`,
        hostports: [`e${e}.${tag}.bench.example:443`],
        ...(size.cas ? { mutual_tls: { certificate_authority_ids: [`ca-${e % size.cas}`, `ca-${(e + 1) % size.cas}`] } } : {}),
        routes,
      }));
    }
    writeFileSync(join(dir, `edges-${String(f).padStart(2, '0')}.yaml`), docs.join('---\n'));
  }
}
