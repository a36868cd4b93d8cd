import { describe, expect, it } from 'vitest';
import { httpsEdge } from '../../src/kinds/https-edge.js';
import type { KindDef } from '../../src/kinds/types.js';
import { ETAG, toResponse } from '../../src/service/responses/serialize.js';
import type { ObjectRow } from '../../src/store/objects.js';

const BASE = 'https://api.example.test';
const row = (id: string, kind: string, parent: string | null, body: Record<string, unknown>): ObjectRow => ({
  id, account_id: 'acct_1', kind, parent_id: parent, created_at: '2026-11-26T01:02:03Z', body, version: '3',
});

describe('response shaping', () => {
  it('an edge: fields in order, modules null or shaped, routes in the order given, the ETag on the edge', () => {
    const edge = row('edghts_1', 'httpsEdge', null, { hostports: ['a.example.com:443'], description: 'd', tls_termination: { min_version: '1.2' } });
    const r1 = row('edghtsrt_1', 'httpsEdgeRoute', 'edghts_1', { match_type: 'path_prefix', match: '/a' });
    const r2 = row('edghtsrt_2', 'httpsEdgeRoute', 'edghts_1', { match_type: 'path_prefix', match: '/b' });
    const out = toResponse(httpsEdge, edge, BASE, new Map([['edghts_1', [r1, r2]]]));
    expect(Object.keys(out).slice(0, 5)).toEqual(['id', 'uri', 'created_at', 'description', 'hostports']);
    expect(out).toMatchObject({ id: 'edghts_1', uri: `${BASE}/edges/https/edghts_1`, created_at: '2026-11-26T01:02:03Z', mutual_tls: null });
    expect(out.tls_termination).toMatchObject({ min_version: '1.2' });
    expect((out.routes as { id: string; uri: string }[]).map((r) => [r.id, r.uri])).toEqual([
      ['edghtsrt_1', `${BASE}/edges/https/edghts_1/routes/edghtsrt_1`],
      ['edghtsrt_2', `${BASE}/edges/https/edghts_1/routes/edghtsrt_2`],
    ]);
    expect((out as { [ETAG]?: string })[ETAG]).toBe('"3"');
  });

  it('a kind embedding two kinds: each field gets the children of its own kind only', () => {
    // No kind embeds two today; children of a parent come in one list, so the field must pick by kind.
    const twoEmbeds: KindDef = { ...httpsEdge, embeds: { routes: 'httpsEdgeRoute', cas: 'certificateAuthority' } };
    const edge = row('edghts_1', 'httpsEdge', null, {});
    const route = row('edghtsrt_1', 'httpsEdgeRoute', 'edghts_1', { match_type: 'path_prefix', match: '/a' });
    const ca = row('ca_1', 'certificateAuthority', 'edghts_1', { description: 'c' });
    const out = toResponse(twoEmbeds, edge, BASE, new Map([['edghts_1', [route, ca]]]));
    expect((out.routes as { id: string }[]).map((r) => r.id)).toEqual(['edghtsrt_1']);
    expect((out.cas as { id: string }[]).map((r) => r.id)).toEqual(['ca_1']);
  });
});
