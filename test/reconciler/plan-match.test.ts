import { describe, expect, it } from 'vitest';
import { match, pairWith, type Matched, type Paired } from '../../src/reconciler/plan/phases/match.js';
import type { DesiredObject, ObservedObject } from '../../src/reconciler/plan/state.js';
import { CA_PEM, CA_PEM_2 } from '../helpers/edges.js';
import { context, live, numberedId, want } from '../helpers/plan-phases.js';

const edge = (n: number) => numberedId('edghts', n);
const route = (n: number) => numberedId('edghtsrt', n);
const pool = (n: number) => numberedId('bkdfo', n);
const claimedIds = (m: Matched) => [...m.claimed].map((o) => o.id).sort();

/** The match phase alone: which live object each manifest object is, from hand-built objects. */
describe('planner phase: match', () => {
  it('matches by the identity in this stack\'s marker; a changed immutable field makes it a replace, and the replaced object reads as no one\'s id', () => {
    const ca = live('certificateAuthority', 'ca_1', { ca_pem: CA_PEM }, { identity: 'CertificateAuthority/root' });
    const web = live('httpsEdge', edge(1), { hostports: ['a.example:443'] }, { identity: 'HTTPSEdge/web' });
    const m = match(context([
      want('certificateAuthority', 'CertificateAuthority/root', { ca_pem: CA_PEM_2 }),
      want('httpsEdge', 'HTTPSEdge/web', { hostports: ['a.example:443'] }),
    ], [ca, web]));
    expect(m.matches.get('CertificateAuthority/root')).toMatchObject({ o: ca, replaced: true });
    expect(m.matches.get('HTTPSEdge/web')).toMatchObject({ o: web, replaced: false });
    expect(claimedIds(m)).toEqual(['ca_1', edge(1)]);
    expect([m.kept.get(edge(1)), m.kept.get('ca_1')]).toEqual(['HTTPSEdge/web', undefined]);
    expect(m.keptRefs.get('ca_1')).toBeUndefined(); // replaced: references to it are moved, not read as it
    expect(m.conflicts).toEqual([]);
  });

  it('a rename is matched: the object marked with an identity the manifest object had before is kept', () => {
    const old = live('httpsEdge', edge(1), { hostports: ['a.example:443'] }, { identity: 'HTTPSEdge/old' });
    const m = match(context([want('httpsEdge', 'HTTPSEdge/new', { hostports: ['a.example:443'] }, { previousIdentities: ['HTTPSEdge/old'] })], [old]));
    expect(m.matches.get('HTTPSEdge/new')).toMatchObject({ o: old, renamedFrom: 'HTTPSEdge/old', replaced: false });
    expect(m.kept.get(edge(1))).toBe('HTTPSEdge/new');
  });

  it('children are matched inside their matched parent only: a new parent has no children yet', () => {
    const web = live('httpsEdge', edge(1), {}, { identity: 'HTTPSEdge/web' });
    const api = live('httpsEdgeRoute', route(1), { match_type: 'path_prefix', match: '/api/' }, { identity: 'HTTPSEdge/web/routes/api', parentId: edge(1) });
    const elsewhere = live('httpsEdgeRoute', route(2), { match_type: 'path_prefix', match: '/' }, { identity: 'HTTPSEdge/new/routes/root', parentId: edge(1) });
    const m = match(context([
      want('httpsEdge', 'HTTPSEdge/web', {}),
      want('httpsEdgeRoute', 'HTTPSEdge/web/routes/api', { match_type: 'path_prefix', match: '/api/' }),
      want('httpsEdge', 'HTTPSEdge/new', {}),
      want('httpsEdgeRoute', 'HTTPSEdge/new/routes/root', { match_type: 'path_prefix', match: '/' }),
    ], [web, api, elsewhere]));
    expect(m.matches.get('HTTPSEdge/web/routes/api')?.o).toBe(api);
    expect(m.matches.get('HTTPSEdge/new/routes/root')?.o).toBeUndefined();
    expect(claimedIds(m)).not.toContain(route(2));
  });

  it('of duplicates an interrupted apply left, the copy something refers to is kept; the other is left unclaimed (for the deletes phase)', () => {
    const a = live('failoverBackend', pool(1), { backends: ['bkdhr_x'] }, { identity: 'FailoverBackend/app' });
    const b = live('failoverBackend', pool(2), { backends: ['bkdhr_x'] }, { identity: 'FailoverBackend/app' });
    const user = live('failoverBackend', pool(3), { backends: [pool(2)] }, { identity: 'FailoverBackend/front' });
    const m = match(context([want('failoverBackend', 'FailoverBackend/app', { backends: ['bkdhr_x'] })], [a, b, user]));
    expect(m.matches.get('FailoverBackend/app')?.o).toBe(b);
    expect(claimedIds(m)).not.toContain(pool(1));
  });

  it('of duplicate edges, the copy holding the stack\'s routes is kept, not an empty one listed first (its routes would be made again)', () => {
    const empty = live('httpsEdge', edge(1), {}, { identity: 'HTTPSEdge/web' });
    const full = live('httpsEdge', edge(2), {}, { identity: 'HTTPSEdge/web' });
    const r1 = live('httpsEdgeRoute', route(1), { match_type: 'path_prefix', match: '/r1/' }, { identity: 'HTTPSEdge/web/routes/r1', parentId: edge(2) });
    const m = match(context([
      want('httpsEdge', 'HTTPSEdge/web', {}),
      want('httpsEdgeRoute', 'HTTPSEdge/web/routes/r1', { match_type: 'path_prefix', match: '/r1/' }),
    ], [empty, full, r1]));
    expect(m.matches.get('HTTPSEdge/web')?.o).toBe(full);
    expect(m.matches.get('HTTPSEdge/web/routes/r1')?.o).toBe(r1);
    expect(claimedIds(m)).not.toContain(edge(1));
  });

  it('a collision with another stack\'s or an unmanaged object is reported as a conflict, with the command to adopt an unmanaged one', () => {
    const theirs = live('httpsEdge', edge(1), { hostports: ['a.example:443'] }, { identity: 'HTTPSEdge/web', stack: 'staging' });
    const nobody = live('httpsEdge', edge(2), { hostports: ['b.example:443'] });
    const m = match(context([
      want('httpsEdge', 'HTTPSEdge/a', { hostports: ['A.example:443'] }),
      want('httpsEdge', 'HTTPSEdge/b', { hostports: ['b.example:443'] }),
    ], [theirs, nobody], { adoptCommand: 'edgeplane plan m --adopt' }));
    expect(m.conflicts).toEqual([
      expect.objectContaining({ identity: 'HTTPSEdge/a', id: edge(1), owner: 'stack', stack: 'staging' }),
      expect.objectContaining({ identity: 'HTTPSEdge/b', id: edge(2), owner: 'unmanaged', adopt: 'edgeplane plan m --adopt' }),
    ]);
    expect(m.matches.get('HTTPSEdge/a')).toMatchObject({ conflicted: true });
    expect(m.matches.get('HTTPSEdge/a')?.o).toBeUndefined();
    expect(m.claimed.size).toBe(0);
  });

  it('an adoption is found: with --adopt an unmanaged object with the same identifying value is taken over', () => {
    const nobody = live('httpsEdge', edge(2), { hostports: ['b.example:443'] });
    const m = match(context([want('httpsEdge', 'HTTPSEdge/b', { hostports: ['b.example:443'] })], [nobody], { adopt: true }));
    expect(m.matches.get('HTTPSEdge/b')).toMatchObject({ o: nobody, adopted: true });
    expect(m.conflicts).toEqual([]);
    expect(m.kept.get(edge(2))).toBe('HTTPSEdge/b');
  });

  it('objects nothing identifies are adopted by content, leaves first, and the children of an edge adopted so are matched inside it', () => {
    const leaf = live('failoverBackend', pool(1), { backends: ['bkdhr_x'] });
    const front = live('failoverBackend', pool(2), { backends: [pool(1)] });
    const bare = live('httpsEdge', edge(1), { description: 'bare' });
    const root = live('httpsEdgeRoute', route(1), { match_type: 'path_prefix', match: '/' }, { parentId: edge(1) });
    const m = match(context([
      want('failoverBackend', 'FailoverBackend/front', { backends: [{ $ref: 'FailoverBackend/leaf' }] }),
      want('failoverBackend', 'FailoverBackend/leaf', { backends: ['bkdhr_x'] }),
      want('httpsEdge', 'HTTPSEdge/bare', { description: 'bare' }),
      want('httpsEdgeRoute', 'HTTPSEdge/bare/routes/root', { match_type: 'path_prefix', match: '/' }),
    ], [leaf, front, bare, root], { adopt: true }));
    expect(m.matches.get('FailoverBackend/leaf')).toMatchObject({ o: leaf, adopted: true });
    expect(m.matches.get('FailoverBackend/front')).toMatchObject({ o: front, adopted: true });
    expect(m.matches.get('HTTPSEdge/bare')).toMatchObject({ o: bare, adopted: true });
    expect(m.matches.get('HTTPSEdge/bare/routes/root')).toMatchObject({ o: root, adopted: true });
  });

  it('two unmanaged objects alike are reported, not adopted: only one can be', () => {
    const twins = [live('failoverBackend', pool(1), { backends: ['bkdhr_x'] }), live('failoverBackend', pool(2), { backends: ['bkdhr_x'] })];
    const m = match(context([want('failoverBackend', 'FailoverBackend/app', { backends: ['bkdhr_x'] })], twins, { adopt: true }));
    expect(m.matches.get('FailoverBackend/app')).toMatchObject({ conflicted: true });
    expect(m.conflicts).toHaveLength(1);
    expect(m.conflicts[0].message).toContain(`the same as 2 unmanaged failover backends (${pool(1)}, ${pool(2)})`);
  });

  it('of several unmanaged objects with one identifying value, --adopt takes the one exactly as the manifest says', () => {
    const plain = live('certificateAuthority', 'ca_1', { ca_pem: CA_PEM });
    const described = live('certificateAuthority', 'ca_2', { ca_pem: CA_PEM, description: 'root' });
    const m = match(context([want('certificateAuthority', 'CertificateAuthority/root', { ca_pem: CA_PEM, description: 'root' })], [plain, described], { adopt: true }));
    expect(m.matches.get('CertificateAuthority/root')).toMatchObject({ o: described, adopted: true });
    expect(m.conflicts).toEqual([]);
  });

  it('pairs made while the pages are read (as a plan makes them) match exactly as matching by its own index does', () => {
    /** What `preparePlan` hands over: each live object of this stack, paired with the manifest object of its marker's identity. */
    const pairedAs = (desired: DesiredObject[], observed: ObservedObject[]): Paired => {
      const at = new Map(desired.map((d, i) => [d.identity, i]));
      const paired: Paired = { owned: [], settled: [] };
      for (const o of observed) {
        const i = o.owner.type === 'this' && o.marker ? at.get(o.marker.id) : undefined;
        if (i !== undefined) pairWith(paired, i, o);
      }
      return paired;
    };
    const said = (m: Matched) => ({
      matches: [...m.matches].map(([k, x]) => [k, x.o?.id, x.replaced, x.adopted, x.renamedFrom, x.conflicted]),
      claimed: claimedIds(m),
      kept: [edge(1), edge(2), edge(3), route(1), route(2), pool(1), pool(2), pool(3), pool(4), 'ca_1'].map((id) => m.kept.get(id)),
      keptRefs: [pool(1), pool(2), pool(3), pool(4), 'ca_1'].map((id) => m.keptRefs.get(id)),
      conflicts: m.conflicts,
    });
    const desired = [
      want('certificateAuthority', 'CertificateAuthority/root', { ca_pem: CA_PEM_2 }),
      want('failoverBackend', 'FailoverBackend/app', { backends: ['bkdhr_x'] }),
      want('failoverBackend', 'FailoverBackend/new', { backends: ['bkdhr_y'] }, { previousIdentities: ['FailoverBackend/old'] }),
      want('failoverBackend', 'FailoverBackend/kind', { backends: ['bkdhr_z'] }),
      want('httpsEdge', 'HTTPSEdge/web', {}),
      want('httpsEdgeRoute', 'HTTPSEdge/web/routes/r1', { match_type: 'path_prefix', match: '/r1/' }),
      want('httpsEdgeRoute', 'HTTPSEdge/web/routes/moved', { match_type: 'path_prefix', match: '/m/' }),
      want('httpsEdge', 'HTTPSEdge/fresh', { hostports: ['b.example:443'] }),
    ];
    const observed = [
      live('certificateAuthority', 'ca_1', { ca_pem: CA_PEM }, { identity: 'CertificateAuthority/root' }), // replaced
      live('failoverBackend', pool(1), { backends: ['bkdhr_x'] }, { identity: 'FailoverBackend/app' }), // duplicates
      live('failoverBackend', pool(2), { backends: ['bkdhr_x'] }, { identity: 'FailoverBackend/app' }),
      live('failoverBackend', pool(3), { backends: [pool(2)] }, { identity: 'FailoverBackend/old' }), // renamed
      live('httpsEdge', edge(3), {}, { identity: 'FailoverBackend/kind' }), // another kind under that identity
      live('httpsEdge', edge(1), {}, { identity: 'HTTPSEdge/web' }),
      live('httpsEdge', edge(2), {}, { identity: 'HTTPSEdge/web' }),
      live('httpsEdgeRoute', route(1), { match_type: 'path_prefix', match: '/r1/' }, { identity: 'HTTPSEdge/web/routes/r1', parentId: edge(2) }),
      live('httpsEdgeRoute', route(2), { match_type: 'path_prefix', match: '/m/' }, { identity: 'HTTPSEdge/web/routes/moved', parentId: edge(3) }), // in another parent
      live('failoverBackend', pool(4), { backends: ['bkdhr_w'] }, { identity: 'FailoverBackend/gone' }),
      live('httpsEdge', 'edghts_other', { hostports: ['b.example:443'] }, { identity: 'HTTPSEdge/fresh', stack: 'other' }),
    ];
    for (const order of [observed, [...observed].reverse()]) {
      const own = match(context(desired, order));
      const handed = match(context(desired, order, { paired: pairedAs(desired, order) }));
      expect(said(handed)).toEqual(said(own));
      // Matches by identity read the same however they are kept.
      for (const id of [...desired.map((d) => d.identity), 'HTTPSEdge/none']) {
        expect([handed.matches.has(id), handed.matches.get(id)?.o?.id]).toEqual([own.matches.has(id), own.matches.get(id)?.o?.id]);
      }
      expect([handed.matches.size, [...handed.matches.keys()], [...handed.matches.values()].map((x) => x.d.identity)])
        .toEqual([own.matches.size, [...own.matches.keys()], [...own.matches.values()].map((x) => x.d.identity)]);
      const each = (m: Matched) => { const out: string[] = []; m.matches.forEach((x, k) => out.push(`${k} ${x.o?.id}`)); return out; };
      expect(each(handed)).toEqual(each(own));
      // Each case did what it is here for: kept, kept of duplicates, renamed, not another kind's, not in another parent, a conflict.
      expect(said(own).matches.map(([k, id, , , via, conflicted]) => [k, id, via, conflicted])).toEqual([
        ['CertificateAuthority/root', 'ca_1', undefined, undefined], ['FailoverBackend/app', pool(2), undefined, undefined],
        ['FailoverBackend/new', pool(3), 'FailoverBackend/old', undefined], ['FailoverBackend/kind', undefined, undefined, undefined],
        ['HTTPSEdge/web', edge(2), undefined, undefined], ['HTTPSEdge/web/routes/r1', route(1), undefined, undefined],
        ['HTTPSEdge/web/routes/moved', undefined, undefined, undefined], ['HTTPSEdge/fresh', undefined, undefined, true],
      ]);
    }
  });
});
