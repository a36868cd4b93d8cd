import { CrossChecks } from '../manifests/cross-checks.js';
import type { ManifestObject } from '../manifests/model.js';
import { hasErrors, sortProblems, type Problem } from '../manifests/problems.js';
import { keyFingerprints, resolveSecrets, secretFiles, type Fingerprinter, type ResolvedSecret, type SecretEnv } from '../manifests/secrets.js';
import { ValidationMemo, type ValidateOptions } from '../manifests/validate.js';
import { buildDesired, type DesiredMemo } from '../plan/desired.js';
import { identical } from '../plan/normalize.js';
import type { DesiredObject } from '../plan/state.js';
import { forEachRef } from '../plan/tokens.js';
import { fileState } from './files.js';
import type { ManifestFile } from './manifest-cache.js';

/** What a watch session keeps of one manifest file, from its documents to its desired objects. */
interface FileState {
  /** The documents it was made from (the same objects while the file's bytes are the same). */
  docs: ManifestFile['docs'];
  loadProblems: Problem[];
  /** Its top-level manifest objects (children inside), and what validation found in each document alone. */
  objects: ManifestObject[];
  localProblems: Problem[];
  secretProblems: Problem[];
  /** Its objects' secrets, by `<identity>#<path>`. */
  secrets: Map<string, ResolvedSecret>;
  /** The files its `{file: …}` secrets are read from (absolute): read again every run, as a full plan reads them. */
  fileSecrets: string[];
  /** Each of those files' state (`fileState`) when last read. */
  secretFileStates: Map<string, string>;
  /** Its desired objects, as last built (none yet: the manifests have not validated since it was read). */
  desired: DesiredObject[];
  /** Its place among the files (the order they are read in). */
  rank: number;
}

/**
 * The manifests' side of a watch session, kept per file between runs. A file whose bytes did not
 * change keeps its documents, objects, problems, secrets and desired objects; a file saved is
 * validated on its own again, its objects replace its old ones in the checks across files
 * (`CrossChecks`, which check again only what the change reaches), its secrets are read again, and
 * its desired objects are built again and compared with those they replace. A file added is read
 * as a saved one; a file removed takes its objects out. What a run finds is what validating and
 * building every file again would find, in the same order.
 *
 * It also keeps, for the planner, the desired objects by identity and `RefIndex` (who refers to
 * whom, children by parent), updated per object that changed.
 */
export class DesiredState {
  private readonly files = new Map<string, FileState>();
  /** The files of the last run, in order. */
  private order: FileState[] = [];
  private readonly ranks = new Map<string, number>();
  private readonly validation = new ValidationMemo();
  private readonly cross = new CrossChecks((file) => this.ranks.get(file) ?? Infinity);
  private readonly memo: DesiredMemo = new WeakMap();
  /** Each desired object's file and place in it. */
  private readonly placeOf = new WeakMap<DesiredObject, { file: FileState; at: number }>();
  /** Files read since their desired objects were last built, and desired objects of files since removed. */
  private readonly stale = new Set<FileState>();
  private retired: DesiredObject[] = [];
  private every: DesiredObject[] | undefined;
  /** The desired objects of the manifests as they last validated, by identity. */
  readonly byIdentity = new Map<string, DesiredObject>();
  readonly refs = new RefIndex();
  /** Secrets read, by `<identity>#<path>`: every file's, merged again when a file's change. */
  readonly secrets = new Map<string, ResolvedSecret>();
  private secretsChanged = false;

  constructor(private readonly opts: ValidateOptions & SecretEnv) {}

  /**
   * Brings the state to the files as read now. The problems, sorted; when none is an error, also
   * the identities whose desired state changed (new, edited, or gone), and the state's desired
   * objects are those of these files.
   */
  update(files: ManifestFile[]): { problems: Problem[]; changed?: string[] } {
    const taken = this.take(files);
    return taken.ok ? { problems: taken.problems, changed: this.build() } : { problems: taken.problems };
  }

  /**
   * `update`, with the secrets' fingerprints asked of the service (`keyFingerprints`) before the
   * desired objects are built: what `watch` runs.
   */
  async updateKeyed(files: ManifestFile[], fingerprint: Fingerprinter): Promise<{ problems: Problem[]; changed?: string[] }> {
    const taken = this.take(files);
    if (!taken.ok) return { problems: taken.problems };
    await keyFingerprints(this.secrets, this.opts.stack, fingerprint);
    return { problems: taken.problems, changed: this.build() };
  }

  private take(files: ManifestFile[]): { problems: Problem[]; ok: boolean } {
    // Files gone, and the documents gone from files changed, are taken out first: an object moved
    // from one file to another is out of the old one before it is in the new one.
    const now = new Map(files.map((f) => [f.path, f]));
    for (const [path, st] of this.files) {
      const f = now.get(path);
      if (f?.docs === st.docs) continue;
      if (f) {
        const kept = new Set(f.docs);
        this.cross.remove(st.objects.filter((o) => !kept.has(o.doc)));
        continue;
      }
      this.drop(st);
      this.files.delete(path);
    }
    this.order = [];
    this.ranks.clear();
    for (let i = 0; i < files.length; i++) if (files[i].docs.length) this.ranks.set(files[i].docs[0].file, i);
    for (let i = 0; i < files.length; i++) {
      const f = files[i];
      let st = this.files.get(f.path);
      if (!st) this.files.set(f.path, (st = this.read(f)));
      else if (st.docs !== f.docs) this.reread(st, f);
      else if (st.fileSecrets.length) this.resolve(st);
      st.rank = i;
      this.order.push(st);
    }
    if (this.secretsChanged) {
      // By key, the last file's (as reading every file would have it; two files declare one
      // identity only in manifests that do not validate).
      this.secrets.clear();
      for (const st of this.order) for (const [k, v] of st.secrets) this.secrets.set(k, v);
      this.secretsChanged = false;
    }

    const problems: Problem[] = [];
    for (const st of this.order) for (const p of st.loadProblems) problems.push(p);
    for (const st of this.order) for (const p of st.localProblems) problems.push(p);
    for (const p of this.cross.problems()) problems.push(p);
    let sorted = sortProblems(problems);
    if (hasErrors(sorted)) return { problems: sorted, ok: false };
    const secretProblems = this.order.flatMap((st) => st.secretProblems);
    if (secretProblems.length) {
      sorted = sortProblems([...sorted, ...secretProblems]);
      if (hasErrors(sorted)) return { problems: sorted, ok: false };
    }
    return { problems: sorted, ok: true };
  }

  /** A file read: its documents validated, its objects into the checks across files, its secrets read. */
  private read(f: ManifestFile): FileState {
    const st: FileState = {
      docs: [], loadProblems: [], objects: [], localProblems: [], secretProblems: [], secrets: new Map(),
      fileSecrets: [], secretFileStates: new Map(), desired: [], rank: 0,
    };
    this.reread(st, f);
    return st;
  }

  /**
   * A file read again: its documents validated (those it had before, the same objects, are not
   * validated again), the objects of its new documents into the checks across files (those of
   * documents it no longer has were taken out), its secrets read, its desired objects retired
   * (those of documents it still has come back as the same objects when built).
   */
  private reread(st: FileState, f: ManifestFile): void {
    const had = new Set(st.docs);
    const objects: ManifestObject[] = [];
    const added: ManifestObject[] = [];
    const localProblems: Problem[] = [];
    for (const doc of f.docs) {
      const local = this.validation.local(doc, this.opts);
      if (local.object) {
        objects.push(local.object);
        if (!had.has(doc)) added.push(local.object);
      }
      for (const p of local.problems) localProblems.push(p);
    }
    this.cross.add(added);
    for (const d of st.desired) this.retired.push(d);
    st.docs = f.docs;
    st.loadProblems = f.problems;
    st.objects = objects;
    st.localProblems = localProblems;
    st.fileSecrets = secretFiles(objects, this.opts.cwd);
    this.resolve(st);
  }

  private resolve(st: FileState): void {
    // Before the read: a file written after it reads as changed (and is read again), not the reverse.
    st.secretFileStates = new Map(st.fileSecrets.map((f) => [f, fileState(f)]));
    const s = resolveSecrets(st.objects, this.opts.stack, this.opts);
    if (st.secrets.size || s.secrets.size) this.secretsChanged = true;
    st.secrets = s.secrets;
    st.secretProblems = s.problems;
    this.stale.add(st);
  }

  /** A file changed or gone: its objects out of the checks across files, its secrets forgotten, its desired objects retired. */
  private drop(st: FileState): void {
    this.cross.remove(st.objects);
    if (st.secrets.size) this.secretsChanged = true;
    for (const d of st.desired) this.retired.push(d);
    this.stale.delete(st);
  }

  /**
   * Builds the desired objects of the files read since the last build, and names the identities
   * whose desired state changed. A desired object whose state is the same as the one it replaces
   * takes that one's body (the same object: the planner's memo of normal forms answers for it);
   * an object the memo handed back as it was (its document unchanged) is last run's very object.
   */
  private build(): string[] {
    const changed: string[] = [];
    if (!this.stale.size && !this.retired.length) return changed;
    this.every = undefined;
    const built = new Set<DesiredObject>();
    for (const st of this.order) {
      if (!this.stale.has(st)) continue;
      st.desired = buildDesired(st.objects, this.secrets, this.memo);
      for (let at = 0; at < st.desired.length; at++) {
        const d = st.desired[at];
        built.add(d);
        this.placeOf.set(d, { file: st, at });
        const b = this.byIdentity.get(d.identity);
        if (b === d) continue;
        if (b && sameDesired(b, d)) d.body = b.body;
        else changed.push(d.identity);
        if (b) this.refs.remove(b);
        this.refs.add(d);
        this.byIdentity.set(d.identity, d);
      }
    }
    // Retired objects not built again and still standing for their identity: nothing declares it any more.
    for (const r of this.retired) {
      if (built.has(r) || this.byIdentity.get(r.identity) !== r) continue;
      this.byIdentity.delete(r.identity);
      this.refs.remove(r);
      changed.push(r.identity);
    }
    this.stale.clear();
    this.retired = [];
    return changed;
  }

  /** Every desired object, in manifest order (a full plan's input). */
  /** The files the manifests' `{file: …}` secrets are read from, as of the last update, each with its state (`fileState`) when read. */
  secretFiles(): Map<string, string> {
    const out = new Map<string, string>();
    for (const st of this.order) {
      for (const [f, state] of st.secretFileStates) {
        // Two manifest files read one secret file as it changed between them: recorded as neither
        // state, so that it reads as changed and the next run reads both again.
        const other = out.get(f);
        out.set(f, other === undefined || other === state ? state : `mixed:${other}|${state}`);
      }
    }
    return out;
  }

  all(): DesiredObject[] {
    return (this.every ??= this.order.flatMap((st) => st.desired));
  }

  /** The desired objects of these identities, in manifest order. */
  sorted(identities: Iterable<string>): DesiredObject[] {
    const out: DesiredObject[] = [];
    for (const id of identities) {
      const d = this.byIdentity.get(id);
      if (d) out.push(d);
    }
    return out.sort((a, b) => {
      const pa = this.placeOf.get(a)!;
      const pb = this.placeOf.get(b)!;
      return pa.file.rank - pb.file.rank || pa.at - pb.at;
    });
  }
}

/** Whether a desired object says what the one it replaces said. */
function sameDesired(b: DesiredObject, d: DesiredObject): boolean {
  return b.kind === d.kind && b.protect === d.protect && b.userMetadata === d.userMetadata &&
    b.parentIdentity === d.parentIdentity && identical(b.fp, d.fp) && identical(b.body, d.body) &&
    identical(b.previousIdentities, d.previousIdentities);
}

/** Reference indexes kept between runs, updated per desired object that changed. */
export class RefIndex {
  /** Identity → identities of the desired objects that refer to it by name. */
  private readonly referrers = new Map<string, Set<string>>();
  /** Parent identity → its children's identities. */
  private readonly children = new Map<string, Set<string>>();
  private static readonly refsOf = new WeakMap<DesiredObject, string[]>();

  /** Names a desired object refers to (its body's reference tokens), found once per object. */
  static refs(d: DesiredObject): string[] {
    let out = RefIndex.refsOf.get(d);
    if (!out) {
      const found: string[] = [];
      forEachRef(d.body, (identity) => found.push(identity));
      RefIndex.refsOf.set(d, (out = found));
    }
    return out;
  }

  add(d: DesiredObject): void {
    for (const target of RefIndex.refs(d)) setOf(this.referrers, target).add(d.identity);
    if (d.parentIdentity) setOf(this.children, d.parentIdentity).add(d.identity);
  }

  remove(d: DesiredObject): void {
    for (const target of RefIndex.refs(d)) this.referrers.get(target)?.delete(d.identity);
    if (d.parentIdentity) this.children.get(d.parentIdentity)?.delete(d.identity);
  }

  referrersOf(identity: string): Iterable<string> {
    return this.referrers.get(identity) ?? [];
  }

  childrenOf(identity: string): Iterable<string> {
    return this.children.get(identity) ?? [];
  }
}

function setOf(m: Map<string, Set<string>>, k: string): Set<string> {
  let s = m.get(k);
  if (!s) m.set(k, (s = new Set()));
  return s;
}
