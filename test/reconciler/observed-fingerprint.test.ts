import { describe, expect, it } from 'vitest';
import { kindByName } from '../../src/kinds/registry.js';
import { observeOne } from '../../src/reconciler/plan/observed.js';

const route = kindByName('httpsEdgeRoute');
const marker = JSON.stringify({ managed_by: { id: 'HTTPSEdge/web/routes/api', stack: 'prod', tool: 'edgeplane', v: 1 } });
const base = {
  id: 'edghtsrt_000000000000000000000000001', uri: 'https://api.example/edges/https/edghts_1/routes/edghtsrt_1',
  edge_id: 'edghts_000000000000000000000000001', created_at: '2026-11-23T10:00:00Z', match_type: 'path_prefix', match: '/api/',
  description: 'api', metadata: marker, backend: { enabled: true, backend: { id: 'bkdfo_000000000000000000000000001', uri: 'https://x/b' } },
  compression: null, request_headers: null,
};
const fp = (resp: Record<string, unknown>, parent = 'edghts_000000000000000000000000001') => observeOne(route, resp, 'prod', parent).fingerprint;

describe('the fingerprint a saved plan records per object', () => {
  it('covers what the plan reads: fields, modules, references, metadata, parent', () => {
    const f = fp(base);
    expect(fp({ ...base })).toBe(f);
    expect(fp({ ...base, match: '/v2/' })).not.toBe(f);
    expect(fp({ ...base, compression: { enabled: true } })).not.toBe(f);
    expect(fp({ ...base, backend: { enabled: false, backend: base.backend.backend } })).not.toBe(f);
    expect(fp({ ...base, backend: { enabled: true, backend: { id: 'bkdfo_000000000000000000000000002', uri: 'https://x/c' } } })).not.toBe(f);
    expect(fp({ ...base, metadata: marker.replace('"prod"', '"staging"') })).not.toBe(f);
    expect(fp(base, 'edghts_000000000000000000000000002')).not.toBe(f);
  });

  it('ignores what no plan reads: server-set fields and key order', () => {
    const f = fp(base);
    expect(fp({ ...base, created_at: '2027-01-01T00:00:00Z', uri: 'https://elsewhere/x' })).toBe(f);
    const reordered = Object.fromEntries(Object.entries(base).reverse());
    expect(fp(reordered)).toBe(f);
  });
});
