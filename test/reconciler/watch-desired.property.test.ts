import fc from 'fast-check';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { formatProblem, hasErrors, sortProblems } from '../../src/reconciler/manifests/problems.js';
import { resolveSecrets } from '../../src/reconciler/manifests/secrets.js';
import { validateDir } from '../../src/reconciler/plan/prepare.js';
import { buildDesired } from '../../src/reconciler/plan/desired.js';
import type { DesiredObject } from '../../src/reconciler/plan/state.js';
import { DesiredState } from '../../src/reconciler/watch/desired-state.js';
import { ManifestCache } from '../../src/reconciler/watch/manifest-cache.js';
import { canonicalJson } from '../../src/util/canonical-json.js';
import { ROOT } from '../helpers/cli.js';

/**
 * Watch keeps the manifests per file between runs: a saved file is validated, checked against the
 * others (the checks across files update their indexes per file) and built into desired objects
 * again, the other files not. After every save the problems, the desired objects and the
 * identities said to have changed must be those of validating and building every file again.
 * The saves here move objects between files, add and delete files, duplicate names and unique
 * values across files, rename objects (`renamed_from`), break and mend references into other
 * files, make reference cycles, and change a `{file: …}` secret without touching a manifest.
 */
const pem = (f: string) => readFileSync(join(ROOT, 'test', 'fixtures', 'certs', f), 'utf8');
const PEMS = [pem('rsa-ca.pem'), pem('rsa-ca-2.pem'), pem('ec-ca.pem')];
const FILES = ['a.yaml', 'b.yaml', 'c.yaml', 'sub/d.yaml'];
const STACK = 'desired';

type Doc = Record<string, unknown> & { kind: string; name: string };
type Tree = Record<string, Doc[]>;

function baseTree(): Tree {
  return {
    'a.yaml': [0, 1, 2].map((i) => ({ kind: 'CertificateAuthority', name: `ca-${i}`, description: `CA ${i}`, ca_pem: PEMS[i] })),
    'b.yaml': [0, 1, 2].map((i) => ({ kind: 'FailoverBackend', name: `pool-${i}`, description: `pool ${i}`, backends: i ? ['bkdhr_000000000000000000000000001', `pool-${i - 1}`] : ['bkdhr_000000000000000000000000002'] })),
    'c.yaml': [0, 1].map((e) => edge(e)),
    'sub/d.yaml': [edge(2)],
  };
}

function edge(e: number): Doc {
  return {
    kind: 'HTTPSEdge', name: `edge-${e}`, description: `edge ${e}`, hostports: [`e${e}.example.com:443`],
    mutual_tls: { certificate_authority_ids: [`ca-${e % 3}`] },
    routes: [
      ...[0, 1].map((r) => ({ name: `r${r}`, match_type: 'path_prefix', match: r ? `/p${r}/` : '/', backend: { backend_id: `pool-${(e + r) % 3}` } })),
      ...(e ? [] : [sso()]),
    ],
  };
}

/** A route whose OIDC secret is read from a file. */
function sso() {
  return { name: 'sso', match_type: 'path_prefix', match: '/sso/', backend: { backend_id: 'pool-0' }, oidc: { issuer: 'https://id.example.com', client_id: 'web', client_secret: { file: '../secret.txt' } } };
}

const pick = <T>(xs: T[], i: number): T | undefined => (xs.length ? xs[i % xs.length] : undefined);
/** A document of the tree, with its file. */
function docAt(t: Tree, i: number): { file: string; doc: Doc } | undefined {
  const all = Object.entries(t).flatMap(([file, docs]) => docs.map((doc) => ({ file, doc })));
  return pick(all, i);
}
const ofKind = (t: Tree, kind: string) => Object.values(t).flat().filter((d) => d.kind === kind);
const routesOf = (d: Doc | undefined) => (d?.routes as Record<string, unknown>[] | undefined) ?? [];
const NAMES: Record<string, string[]> = { CertificateAuthority: ['ca-0', 'ca-1', 'ca-2', 'ca-x'], FailoverBackend: ['pool-0', 'pool-1', 'pool-2', 'pool-x'], HTTPSEdge: ['edge-0', 'edge-1', 'edge-2', 'edge-x'] };

type Edit = (t: Tree, secret: { text: string }) => void;
const edits: fc.Arbitrary<Edit> = fc.oneof(
  fc.tuple(fc.nat(), fc.string({ maxLength: 4 })).map(([i, s]): Edit => (t) => { const d = docAt(t, i); if (d) d.doc.description = `d ${s}`; }),
  // An object moved to another file (a new one, maybe); a file left empty is deleted.
  fc.tuple(fc.nat(), fc.nat()).map(([i, f]): Edit => (t) => {
    const d = docAt(t, i);
    if (!d) return;
    t[d.file].splice(t[d.file].indexOf(d.doc), 1);
    const to = FILES[f % FILES.length];
    (t[to] ??= []).push(d.doc);
  }),
  // An object copied into another file: its name (and hostport) twice.
  fc.tuple(fc.nat(), fc.nat()).map(([i, f]): Edit => (t) => { const d = docAt(t, i); if (d) (t[FILES[f % FILES.length]] ??= []).push(structuredClone(d.doc)); }),
  fc.nat().map((i): Edit => (t) => { const d = docAt(t, i); if (d) t[d.file].splice(t[d.file].indexOf(d.doc), 1); }),
  fc.nat().map((i): Edit => (t) => { const f = pick(Object.keys(t), i); if (f) delete t[f]; }),
  // Renamed (another object's name, maybe), with `renamed_from` or without; references to it follow or not.
  fc.tuple(fc.nat(), fc.nat(), fc.boolean(), fc.boolean()).map(([i, n, from, follow]): Edit => (t) => {
    const d = docAt(t, i);
    if (!d) return;
    const old = d.doc.name;
    d.doc.name = NAMES[d.doc.kind][n % 4];
    if (from) d.doc.renamed_from = old;
    else delete d.doc.renamed_from;
    if (!follow) return;
    for (const x of Object.values(t).flat()) {
      if (d.doc.kind === 'CertificateAuthority') {
        const ids = (x.mutual_tls as { certificate_authority_ids?: string[] } | undefined)?.certificate_authority_ids;
        if (ids) (x.mutual_tls as { certificate_authority_ids: string[] }).certificate_authority_ids = ids.map((id) => (id === old ? d.doc.name : id));
      }
      if (d.doc.kind === 'FailoverBackend') {
        for (const r of routesOf(x)) if ((r.backend as { backend_id: string }).backend_id === old) r.backend = { backend_id: d.doc.name };
        if (x.kind === 'FailoverBackend') x.backends = (x.backends as string[]).map((b) => (b === old ? d.doc.name : b));
      }
    }
  }),
  fc.tuple(fc.nat(), fc.nat(), fc.nat()).map(([i, j, b]): Edit => (t) => { const r = pick(routesOf(pick(ofKind(t, 'HTTPSEdge'), i)), j); if (r) r.backend = { backend_id: NAMES.FailoverBackend[b % 4] }; }),
  fc.tuple(fc.nat(), fc.nat()).map(([i, b]): Edit => (t) => { const d = pick(ofKind(t, 'FailoverBackend'), i); if (d) d.backends = ['bkdhr_000000000000000000000000001', NAMES.FailoverBackend[b % 4]]; }),
  fc.tuple(fc.nat(), fc.nat()).map(([i, c]): Edit => (t) => { const d = pick(ofKind(t, 'HTTPSEdge'), i); if (d) d.mutual_tls = { certificate_authority_ids: [NAMES.CertificateAuthority[c % 4]] }; }),
  fc.tuple(fc.nat(), fc.nat()).map(([i, h]): Edit => (t) => { const d = pick(ofKind(t, 'HTTPSEdge'), i); if (d) d.hostports = [`e${h % 3}.example.com:443`]; }),
  fc.tuple(fc.nat(), fc.nat(), fc.boolean()).map(([i, j, root]): Edit => (t) => { const r = pick(routesOf(pick(ofKind(t, 'HTTPSEdge'), i)), j); if (r) r.match = root ? '/' : '/p1/'; }),
  fc.tuple(fc.nat(), fc.nat(), fc.nat(), fc.boolean()).map(([i, j, n, from]): Edit => (t) => {
    const r = pick(routesOf(pick(ofKind(t, 'HTTPSEdge'), i)), j);
    if (!r) return;
    if (from) r.renamed_from = r.name;
    r.name = `r${n % 3}`;
  }),
  // A route whose OIDC secret is read from a file; the file's text changed with no manifest saved.
  fc.nat().map((i): Edit => (t) => {
    const d = pick(ofKind(t, 'HTTPSEdge'), i);
    if (d && !routesOf(d).some((r) => r.name === 'sso')) routesOf(d).push(sso());
  }),
  fc.string({ minLength: 1, maxLength: 4 }).map((s): Edit => (_t, secret) => { secret.text = `secret ${s}`; }),
);

function write(dir: string, t: Tree, secret: { text: string }) {
  // `../secret.txt` from the files of m/ and of m/sub/ both.
  for (const at of ['secret.txt', 'm/secret.txt']) writeFileSync(join(dir, at), secret.text);
  for (const f of FILES) {
    const path = join(dir, 'm', f);
    if (t[f]) writeFileSync(path, t[f].map((d) => stringify(d)).join('---\n'));
    else if (existsSync(path)) unlinkSync(path);
  }
}

/** What the planner reads of a desired object. */
function said(d: DesiredObject) {
  return canonicalJson({ identity: d.identity, kind: d.kind.name, body: d.body, fp: d.fp, formerFp: d.formerFp ?? null, userMetadata: d.userMetadata ?? null, protect: d.protect, parent: d.parentIdentity ?? null, previous: d.previousIdentities ?? [] });
}

/** Validating and building every file again, as plan does. */
function fresh(root: string, cwd: string) {
  const v = validateDir({ root, stack: STACK, cwd });
  if (hasErrors(v.problems)) return { problems: v.problems };
  const s = resolveSecrets(v.objects, STACK, { env: {}, cwd });
  const problems = sortProblems([...v.problems, ...s.problems]);
  if (hasErrors(problems)) return { problems };
  return { problems, desired: buildDesired(v.objects, s.secrets), secrets: s.secrets };
}

describe('watch: the manifests kept per file', () => {
  it('property: problems, desired objects and what changed are those of validating every file again, save after save', () => {
    fc.assert(fc.property(fc.array(fc.array(edits, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 8 }), (saves) => {
      const dir = mkdtempSync(join(tmpdir(), 'ep-watch-desired-'));
      try {
        const root = join(dir, 'm');
        const cwd = dir;
        mkdirSync(join(root, 'sub'), { recursive: true });
        const tree = baseTree();
        const secret = { text: 'first secret' };
        write(dir, tree, secret);
        const cache = new ManifestCache();
        const state = new DesiredState({ stack: STACK, env: {}, cwd });
        let before = new Map<string, string>();
        for (const save of [[], ...saves]) {
          for (const edit of save) edit(tree, secret);
          write(dir, tree, secret);
          const got = state.update(cache.loadFiles(root, cwd));
          const want = fresh(root, cwd);
          expect(got.problems.map(formatProblem)).toEqual(want.problems.map(formatProblem));
          expect(got.changed !== undefined).toBe(want.desired !== undefined);
          if (!want.desired) continue;
          const now = new Map(want.desired.map((d) => [d.identity, said(d)]));
          expect(state.all().map(said)).toEqual(want.desired.map(said));
          expect([...state.secrets].map(([k, v]) => `${k} ${v.fingerprint}`).sort()).toEqual([...want.secrets!].map(([k, v]) => `${k} ${v.fingerprint}`).sort());
          const changed = new Set([...now.keys(), ...before.keys()].filter((id) => now.get(id) !== before.get(id)));
          expect(new Set(got.changed)).toEqual(changed);
          // Any part of them, in manifest order.
          const some = want.desired.filter((_, i) => i % 3 === 1);
          expect(state.sorted([...some].reverse().map((d) => d.identity)).map(said)).toEqual(some.map(said));
          before = now;
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }), { numRuns: 150 });
  }, 120_000);
});
