import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach } from 'vitest';
import { tsxModuleUrl } from '../../src/util/worker.js';
import { CI_VARIABLES } from '../../src/cli/ci.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/**
 * The CLI from the sources, as the dev loop runs it: tsx with edgeplane's own tsconfig (see
 * `cliEnv`).
 */
export const SOURCES_CLI = ['--import', tsxModuleUrl('.'), ROOT + 'src/cli/main.ts'];
/**
 * The `edgeplane` the tests run as a process: bin/edgeplane.js on the build (dist/), which
 * test/setup/build.ts brings up to date before any test runs; each process then starts without
 * tsx compiling the sources. EDGEPLANE_TEST_CLI=sources runs them through tsx instead. The
 * installed package (packed, then installed from the tarball) is test/package's to try.
 */
export const CLI = process.env.EDGEPLANE_TEST_CLI === 'sources' ? SOURCES_CLI : [ROOT + 'bin/edgeplane.js'];


/**
 * A warning Node printed on a CLI process's stderr (`(node:1234) MaxListenersExceededWarning: …`,
 * `ExperimentalWarning`, a deprecation): the CLI must print none in ordinary use. Every process
 * these helpers start is looked at when it ends; the test (or, for a process a `beforeAll`
 * started, the file) fails on the first one.
 */
const NODE_WARNING = /^\(node:\d+\) (?:\[[^\]]+\] )?\w*Warning\b.*$/gm;
const warned: string[] = [];

/** Node's warnings in `stderr`, each as its line. */
export function nodeWarnings(stderr: string): string[] {
  return [...stderr.matchAll(NODE_WARNING)].map((m) => m[0]);
}

function noteWarnings(args: string[], stderr: string): void {
  for (const w of nodeWarnings(stderr)) warned.push(`edgeplane ${args.join(' ').slice(0, 120)}: ${w}`);
}

function failOnWarnings(): void {
  if (!warned.length) return;
  const found = warned.splice(0);
  throw new Error(`Node printed ${found.length} warning(s) on a CLI process's stderr:\n${found.join('\n')}`);
}
afterEach(failOnWarnings);
afterAll(failOnWarnings);

export interface CliResult { code: number | null; stdout: string; stderr: string }

/** Runs `edgeplane ARGS` as a user would, as its own process (`cli`: another way to start it, as SOURCES_CLI). */
export function runCli(args: string[], opts: { env?: Record<string, string | undefined>; cwd?: string; input?: string; cli?: string[] } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(opts.cli ?? CLI), ...args], {
      cwd: opts.cwd ?? ROOT,
      env: cliEnv(opts.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      noteWarnings(args, stderr);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

export function cliEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', TSX_TSCONFIG_PATH: ROOT + 'tsconfig.json' };
  delete env.DATABASE_URL;
  delete env.EDGEPLANE_API_URL;
  delete env.EDGEPLANE_API_KEY;
  // A process runs as on a developer's machine, whether the suite itself runs in CI (.ci/run sets
  // CI=true) or not: a test of the CI refusal sets these itself.
  for (const v of CI_VARIABLES) delete env[v];
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export interface Served { url: string; child: ChildProcess; logs: () => string; stop: (signal?: NodeJS.Signals) => Promise<number | null> }

/** Starts `edgeplane serve --port 0 …` and resolves once it logs the URL it listens on. */
export function startServe(args: string[], opts: { env?: Record<string, string | undefined> } = {}): Promise<Served> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, 'serve', '--port', '0', ...args], { cwd: ROOT, env: cliEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const exited = new Promise<number | null>((r) => child.on('close', (code) => { noteWarnings(['serve', ...args], out); r(code); }));
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}`)), 60_000);
    const onData = (d: Buffer) => {
      out += d;
      const m = /"url":"(https?:\/\/[^"]+)"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[1], child, logs: () => out,
          stop: async (signal = 'SIGTERM') => { child.kill(signal); return exited; },
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => { clearTimeout(timer); reject(new Error(`serve exited with ${code}:\n${out}`)); });
  });
}

export interface Running {
  child: ChildProcess;
  out: () => string;
  /** Resolves once stdout + stderr match `re` (after `from` characters), with the match. */
  waitFor: (re: RegExp, opts?: { from?: number; timeoutMs?: number }) => Promise<RegExpExecArray>;
  exited: Promise<number | null>;
}

/** Starts `edgeplane ARGS` and lets the test watch its output while it runs (watch, interrupted applies). */
export function startCli(args: string[], opts: { env?: Record<string, string | undefined>; cwd?: string } = {}): Running {
  const child = spawn(process.execPath, [...CLI, ...args], { cwd: opts.cwd ?? ROOT, env: cliEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (d: Buffer) => { out += d; for (const l of listeners) l(); };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((r) => child.on('close', (code) => { noteWarnings(args, out); for (const l of listeners) l(); r(code); }));
  let closed = false;
  void exited.then(() => { closed = true; });
  const waitFor = (re: RegExp, o: { from?: number; timeoutMs?: number } = {}) => new Promise<RegExpExecArray>((resolve, reject) => {
    const check = () => {
      const m = re.exec(out.slice(o.from ?? 0));
      if (m) { done(); resolve(m); } else if (closed) { done(); reject(new Error(`exited before ${re}:\n${out}`)); }
    };
    const timer = setTimeout(() => { done(); reject(new Error(`timed out waiting for ${re}:\n${out}`)); }, o.timeoutMs ?? 60_000);
    const done = () => { clearTimeout(timer); listeners.delete(check); };
    listeners.add(check);
    check();
  });
  return { child, out: () => out, waitFor, exited };
}
