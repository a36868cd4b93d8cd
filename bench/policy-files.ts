/**
 * The bench's 10 policies (bench:policies, bench/policies-count.ts): the starter set of
 * examples/policies and five more written into `cache`.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('./', import.meta.url));

/** Five more policies beside the starter set: each reads every route or edge. */
const EXTRA = [
  ['route-descriptions', 'HTTPSEdgeRoute', 'has(object.description) || object.match == "/"', 'warn'],
  ['route-backend', 'HTTPSEdgeRoute', 'has(object.backend) && object.backend.backend_id != ""', 'deny'],
  ['edge-description', 'HTTPSEdge', 'has(object.description) && size(object.description) <= 200', 'deny'],
  ['edge-port-443', 'HTTPSEdge', 'object.hostports.all(h, h.endsWith(":443"))', 'deny'],
  ['edge-mtls-two-cas', 'HTTPSEdge', '!has(object.mutual_tls) || size(object.mutual_tls.certificate_authority_ids) <= 4', 'warn'],
] as const;

export function policyFiles(cache: string): string[] {
  const dir = join(cache, 'policies');
  mkdirSync(dir, { recursive: true });
  const starter = join(HERE, '..', 'examples', 'policies');
  const files = readdirSync(starter).filter((f) => f.endsWith('.yaml')).map((f) => join(starter, f));
  for (const [name, kind, expression, severity] of EXTRA) {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, `kind: Policy\nname: ${name}\nmatch:\n  kinds: [${kind}]\nrules:\n  - expression: '${expression}'\n    message: ${name}\n    severity: ${severity}\n`);
    files.push(file);
  }
  return files;
}

