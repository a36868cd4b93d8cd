import { realpathSync, statSync, type Stats } from 'node:fs';
import { basename, relative, resolve, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { isManifestName } from '../manifests/load.js';

/**
 * What the loader reads (`manifestFiles`), and nothing else: below `root`, no name starting with
 * a dot (editor swap files, `.git`) or `node_modules`, and files whose names are manifests'
 * (`isManifestName`). chokidar 5 has no globs: the filter is a function of path and stats.
 */
export function ignoreNonManifest(root: string, path: string, stats?: Stats, rootReal?: string): boolean {
  const rel = relative(root, path);
  if (rel === '' || rel.startsWith('..')) return false;
  if (rel.split(sep).some((seg) => seg.startsWith('.') || seg === 'node_modules')) return true;
  // A link to a directory that holds the root (the loader refuses it): followed, it would be
  // watched again and again inside itself.
  if (rootReal !== undefined && stats?.isDirectory()) {
    try {
      const real = realpathSync(path);
      if (rootReal === real || rootReal.startsWith(real.endsWith(sep) ? real : real + sep)) return true;
    } catch { /* gone meanwhile */ }
  }
  return !!stats?.isFile() && !isManifestName(path);
}

export interface FileWatch {
  /** Resolves once the initial scan is done: events after this are real edits. */
  ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Watches a manifest directory (or file). `awaitWriteFinish` waits until a file's size has been
 * stable for a moment, so an editor's partial write is not read half-done; atomic rename-over
 * saves arrive as `change`.
 */
export function watchManifestFiles(root: string, onChange: (path: string, event: string) => void, opts: { stableMs?: number; onError?: (err: Error) => void } = {}): FileWatch {
  let rootReal: string | undefined;
  try { rootReal = realpathSync(root); } catch { /* not there: nothing below it to follow */ }
  const w: FSWatcher = watch(root, {
    ignoreInitial: true,
    ignored: (path: string, stats?: Stats) => ignoreNonManifest(root, path, stats, rootReal),
    awaitWriteFinish: { stabilityThreshold: opts.stableMs ?? 50, pollInterval: 10 },
  });
  w.on('all', (event, path) => {
    if (event === 'add' || event === 'change' || event === 'unlink' || event === 'unlinkDir') onChange(path, event);
  });
  w.on('error', (err) => opts.onError?.(err as Error));
  const ready = new Promise<void>((resolve) => w.once('ready', () => resolve()));
  return { ready, close: () => w.close() };
}

/**
 * Watches files and folders the manifests depend on outside the watched directory: overlays,
 * policies, the stack file (`settingsOutside`). In a folder, what the loader would read (files
 * with manifest names, no dot names); a path not there yet is watched for (chokidar waits for it).
 */
export function watchOtherPaths(paths: string[], onChange: (path: string, event: string) => void, opts: { stableMs?: number; onError?: (err: Error) => void } = {}): FileWatch {
  const bases = new Set(paths.map((p) => resolve(p)));
  const w: FSWatcher = watch(paths, {
    ignoreInitial: true,
    ignored: (path: string, stats?: Stats) => !bases.has(resolve(path)) && (basename(path).startsWith('.') || basename(path) === 'node_modules' || (!!stats?.isFile() && !isManifestName(path))),
    awaitWriteFinish: { stabilityThreshold: opts.stableMs ?? 50, pollInterval: 10 },
  });
  w.on('all', (event, path) => {
    if (event === 'add' || event === 'change' || event === 'unlink' || event === 'unlinkDir' || event === 'addDir') onChange(path, event);
  });
  w.on('error', (err) => opts.onError?.(err as Error));
  const ready = new Promise<void>((resolve) => w.once('ready', () => resolve()));
  return { ready, close: () => w.close() };
}

/** What tells that a file's contents changed without reading them: missing (and why), or its inode, size and modification time. */
export function fileState(path: string): string {
  try {
    const st = statSync(path);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch (err) {
    return `missing:${(err as NodeJS.ErrnoException).code ?? ''}`;
  }
}

/** The modification time a `fileState` holds (undefined for a missing file). */
export function fileMtimeMs(state: string): number | undefined {
  if (state.startsWith('missing:')) return undefined;
  const t = Number(state.slice(state.lastIndexOf(':') + 1));
  return Number.isFinite(t) ? t : undefined;
}
