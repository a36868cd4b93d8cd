import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { DEFAULT_STACK, nestedStackProblems } from '../manifests/config.js';
import { manifestFiles, readManifest, type SourceDoc } from '../manifests/load.js';
import type { Problem } from '../manifests/problems.js';

/** One manifest file as read: its documents and load problems, the same objects for as long as its bytes are. */
export interface ManifestFile { path: string; docs: SourceDoc[]; problems: Problem[] }

/**
 * Parsed manifest files kept between watch runs. Every run still reads every file (the event is
 * never trusted), into one buffer kept for the purpose and compared with the bytes kept: only a
 * file whose bytes changed is read into a buffer of its own and parsed again, which is most of the
 * cost of loading a large tree when one file was saved. Of a file parsed again, the documents
 * whose text and place did not change are the objects read before.
 */
export class ManifestCache {
  private readonly files = new Map<string, ManifestFile & { bytes: Buffer }>();

  /**
   * Every manifest file, in the order the loader reads them; after them, the settings file of each
   * directory left out for its own (`manifestFiles`), with no documents and what
   * `nestedStackProblems` says of it for `stack`.
   */
  loadFiles(root: string, cwd = process.cwd(), stack = DEFAULT_STACK): ManifestFile[] {
    const nested: string[] = [];
    const paths = manifestFiles(root, nested);
    const out: ManifestFile[] = [];
    const seen = new Set<string>();
    for (const path of paths) {
      seen.add(path);
      // Read every time, parsed again only when the bytes changed (a read is cheap; parsing is not).
      let entry = this.files.get(path);
      if (!entry || !holds(path, entry.bytes)) {
        const bytes = readFileSync(path);
        const { docs, problems } = readManifest(path, cwd, bytes);
        // A document the save left as it was (the same text on the same line) is the one read
        // before: what was found in it is kept.
        const before = new Map(entry?.docs.map((d) => [d.index, d]));
        for (let i = 0; i < docs.length; i++) {
          const old = before.get(docs[i].index);
          if (old && docs[i].reuse) docs[i] = docs[i].reuse!(old);
        }
        this.files.set(path, (entry = { path, bytes, docs, problems }));
      }
      out.push(entry);
    }
    for (const path of this.files.keys()) if (!seen.has(path)) this.files.delete(path);
    for (const path of nested) out.push({ path, docs: [], problems: nestedStackProblems([path], stack, cwd) });
    return out;
  }

  /**
   * Whether any manifest file differs from what the last `loadFiles` read (edited, added or removed
   * since). Checked right before applying, so a file still being written when it was read is
   * never applied half-done: the save that finishes it starts the next run.
   */
  changedSinceLoad(root: string): boolean {
    let files: string[];
    try {
      files = manifestFiles(root);
    } catch {
      return true;
    }
    if (files.length !== this.files.size) return true;
    for (const path of files) {
      const entry = this.files.get(path);
      if (!entry) return true;
      try {
        if (!holds(path, entry.bytes)) return true;
      } catch {
        return true;
      }
    }
    return false;
  }
}

/**
 * The buffer files are read into to be compared (grown to the largest file compared): a run
 * reads every manifest file, and most are as they were, so nothing is allocated for them.
 */
let readBuffer = Buffer.allocUnsafe(1 << 16);

/** Whether the file holds exactly `bytes` now: read in full, in the shared buffer. */
function holds(path: string, bytes: Buffer): boolean {
  const fd = openSync(path, 'r');
  try {
    if (fstatSync(fd).size !== bytes.length) return false;
    if (readBuffer.length < bytes.length + 1) readBuffer = Buffer.allocUnsafe(bytes.length + 1);
    // One byte more than expected is asked for: a file grown since fstat reads longer.
    let n = 0;
    for (let got; n <= bytes.length && (got = readSync(fd, readBuffer, n, readBuffer.length - n, n)) > 0;) n += got;
    return n === bytes.length && readBuffer.compare(bytes, 0, n, 0, n) === 0;
  } finally {
    closeSync(fd);
  }
}
