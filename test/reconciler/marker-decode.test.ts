import { describe, expect, it } from 'vitest';
import { decodeMetadata, encodeMetadata, MARKER_VERSION, TOOL, type Marker } from '../../src/reconciler/ownership/marker.js';

/** The same metadata with a space after its first colon: JSON reads it the same, the plain-marker shortcut does not match it. */
const spaced = (s: string) => s.replace(':', ': ');

describe('decodeMetadata', () => {
  const marker = (id: string, stack = 'prod'): Marker => ({ tool: TOOL, v: MARKER_VERSION, stack, id });
  const cases: [string, string][] = [
    ['a plain marker', encodeMetadata(marker('HTTPSEdge/web/routes/api'), undefined)],
    ['a marker with the user\'s own string', encodeMetadata(marker('HTTPSEdge/web'), 'team=edge')],
    ['a marker with fingerprints and protection', encodeMetadata({ ...marker('HTTPSEdge/web/routes/login'), fp: { 'oidc.client_secret': 'abc' }, protect: true }, undefined)],
    ['an identity with Markdown in it', encodeMetadata(marker('HTTPSEdge/web **No changes.**'), undefined)],
    ['an identity with an escaped line break', encodeMetadata(marker('HTTPSEdge/web\n**No changes.**'), undefined)],
    ['a stack name the reconciler never writes', encodeMetadata(marker('HTTPSEdge/web', 'Prod!'), undefined)],
    ['another tool', '{"managed_by":{"id":"HTTPSEdge/web","stack":"prod","tool":"other","v":1}}'],
    ['another marker version', '{"managed_by":{"id":"HTTPSEdge/web","stack":"prod","tool":"edgeplane","v":2}}'],
    ['a key of someone else beside the marker', '{"managed_by":{"id":"HTTPSEdge/web","stack":"prod","tool":"edgeplane","v":1},"owner":"x"}'],
  ];

  it.each(cases)('%s reads the same with or without the plain-marker shortcut', (_, stored) => {
    const [fast, parsed] = [decodeMetadata(stored), decodeMetadata(spaced(stored))];
    expect(fast.marker).toEqual(parsed.marker);
    // Foreign metadata is the user's as stored: each its own text.
    expect(fast.user).toBe(parsed.user === spaced(stored) ? stored : parsed.user);
  });

  it('a plain marker is read as the reconciler wrote it; a forged identity or stack leaves the object unmanaged', () => {
    expect(decodeMetadata(cases[0][1])).toEqual({ marker: marker('HTTPSEdge/web/routes/api') });
    for (const i of [3, 4, 5, 6]) expect(decodeMetadata(cases[i][1])).toEqual({ user: cases[i][1] });
    expect(decodeMetadata('not json')).toEqual({ user: 'not json' });
    expect(decodeMetadata('')).toEqual({});
  });
});
