import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/**
 * The package as a user gets it: packed (`prepack` builds dist/), installed globally from the
 * tarball into a prefix of its own, and run from there, with no TypeScript loader and nothing from
 * this checkout.
 */
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const work = mkdtempSync(join(tmpdir(), 'edgeplane-package-'));
const prefix = join(work, 'prefix');
const installed = join(prefix, 'lib', 'node_modules', 'edgeplane');
const bin = join(prefix, 'bin', 'edgeplane');
let install: ReturnType<typeof spawnSync>;
/** The files of the tarball packed here (what is installed and tried below), as `npm pack --json` lists them. */
let packedFiles: string[];

const npm = (args: string[], cwd = ROOT) => spawnSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' }, timeout: 240_000 });

beforeAll(() => {
  const packed = npm(['pack', '--json', '--pack-destination', work]);
  if (packed.status !== 0) throw new Error(`npm pack failed:\n${packed.stderr}`);
  packedFiles = (JSON.parse(packed.stdout) as { files: { path: string }[] }[])[0].files.map((f) => f.path);
  // Dependencies from the npm cache when they are there (CI's `npm ci` filled it).
  install = npm(['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', join(work, `edgeplane-${version}.tgz`)], work);
}, 300_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the packed package', () => {
  it('ships the compiled CLI, its schemas, docs and licence, and nothing else of the repository (no tests, bench, CI or sources)', () => {
    const files = packedFiles;
    expect(files).toContain('bin/edgeplane.js');
    expect(files).toContain('dist/cli/main.js');
    expect(files).toContain('dist/embedded/embedded-service.js');
    expect(files).toContain('dist/client/http-page-reader.js');
    expect(files).toContain('dist/store/migrations/001_init.sql');
    expect(files).toContain('schemas/manifest.schema.json');
    // The docs the README links to travel with it.
    expect(files).toContain('docs/operations.md');
    const outside = files.filter((f) => !/^(bin\/|dist\/|schemas\/|docs\/[\w.-]+\.md$|package\.json$|README\.md$|LICENSE$)/.test(f));
    expect(outside).toEqual([]);
    expect(files.filter((f) => /\.ts$/.test(f) && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it('installs globally from the tarball with no engine warning, and without tsx or esbuild', () => {
    expect(install.status, String(install.stderr)).toBe(0);
    expect(String(install.stderr)).not.toMatch(/EBADENGINE/);
    expect(existsSync(bin)).toBe(true);
    for (const dev of ['tsx', 'esbuild', 'vitest', 'typescript']) {
      expect(existsSync(join(installed, 'node_modules', dev)), dev).toBe(false);
      expect(existsSync(join(prefix, 'lib', 'node_modules', dev)), dev).toBe(false);
    }
  });

  it('runs `edgeplane --version` and plans examples/small from the installed package', () => {
    const v = spawnSync(bin, ['--version'], { cwd: work, encoding: 'utf8' });
    expect(v.stdout.trim()).toBe(version);
    const state = join(work, 'state');
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
    delete env.DATABASE_URL;
    delete env.EDGEPLANE_API_URL;
    const plan = spawnSync(bin, ['plan', join(ROOT, 'examples/small'), '--state', state], { cwd: work, encoding: 'utf8', env, timeout: 120_000 });
    expect(plan.status, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/Plan: 5 to create, 0 to update, 0 to delete/);
  });

  it('reaches an API over HTTP with its own dependencies (undici): a port with nothing listening is named', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    await new Promise((r) => probe.close(r));
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', EDGEPLANE_API_URL: url, EDGEPLANE_API_KEY: 'ep_k' };
    delete env.DATABASE_URL;
    const plan = spawnSync(bin, ['plan', join(ROOT, 'examples/small')], { cwd: work, encoding: 'utf8', env, timeout: 120_000 });
    expect(plan.status, plan.stderr).toBe(1);
    expect(plan.stderr).toContain(`${url}: connect ECONNREFUSED`);
  });

  it('carries no install-time script that cannot run from the package (prepare does nothing there)', () => {
    const x = join(work, 'extracted');
    spawnSync('mkdir', ['-p', x]);
    expect(spawnSync('tar', ['xzf', join(work, `edgeplane-${version}.tgz`), '-C', x]).status).toBe(0);
    const scripts = (JSON.parse(readFileSync(join(x, 'package', 'package.json'), 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
    // npm runs these where the package is installed from a directory or Git: each must run there.
    for (const s of ['preinstall', 'install', 'postinstall', 'prepare'].filter((n) => scripts[n])) {
      const r = npm(['run', s, '--ignore-scripts=false'], join(x, 'package'));
      expect(r.status, `${s}: ${r.stderr}`).toBe(0);
    }
    expect(existsSync(join(x, 'package', 'dist', 'cli', 'main.js'))).toBe(true);
  });

  /** The action's install step (action/install.mjs) as the runner runs it, into a prefix of its own. */
  const installStep = (actionPath: string, env: Record<string, string>) => new Promise<{ code: number | null; out: string; bin: string }>((resolve, reject) => {
    const prefix = mkdtempSync(join(work, 'action-prefix-'));
    const child = spawn(process.execPath, [join(ROOT, 'action', 'install.mjs')], {
      cwd: work, stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env, GITHUB_ACTION_PATH: actionPath, PATH: `${join(prefix, 'bin')}:${process.env.PATH}`,
        npm_config_prefix: prefix, npm_config_update_notifier: 'false', npm_config_prefer_offline: 'true', ...env,
      },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, bin: join(prefix, 'bin', 'edgeplane') }));
  });

  it("the action installs the release's tarball from the release's address (install: release)", async () => {
    // The release as GitHub serves it: /OWNER/NAME/releases/download/vVERSION/edgeplane-VERSION.tgz.
    const asked: string[] = [];
    const server = createHttpServer((req, res) => {
      asked.push(req.url!);
      if (req.url !== `/o/edgeplane/releases/download/v${version}/edgeplane-${version}.tgz`) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(readFileSync(join(work, `edgeplane-${version}.tgz`)));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      // The runner's path to the action (uses: o/edgeplane@<ref>) names its repository; its version is its package.json's.
      const actionPath = join(work, '_actions', 'o', 'edgeplane', 'some-commit');
      spawnSync('mkdir', ['-p', actionPath]);
      writeFileSync(join(actionPath, 'package.json'), JSON.stringify({ name: 'edgeplane', version }));
      const r = await installStep(actionPath, { GITHUB_SERVER_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, INPUT_INSTALL: 'release' });
      expect(r.code, r.out).toBe(0);
      expect(asked).toEqual([`/o/edgeplane/releases/download/v${version}/edgeplane-${version}.tgz`]);
      expect(r.out).toContain(`edgeplane ${version}`);
      expect(spawnSync(r.bin, ['--version'], { encoding: 'utf8' }).stdout.trim()).toBe(version);
      // No such release: the step fails and says what to do instead.
      const missing = await installStep(actionPath, { GITHUB_SERVER_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, INPUT_INSTALL: 'release', INPUT_VERSION: '9.9.9' });
      expect(missing.code).toBe(1);
      expect(missing.out).toContain('::error::installing edgeplane (install: release) failed (is there a release v9.9.9 with edgeplane-9.9.9.tgz attached?');
    } finally {
      server.close();
    }
  }, 300_000);

  it('the action builds and installs from its own checkout at any commit (install: source)', async () => {
    const clone = join(work, 'action-checkout');
    const cloned = spawnSync('git', ['clone', '--quiet', ROOT, clone], { encoding: 'utf8' });
    expect(cloned.status, cloned.stderr).toBe(0);
    expect(existsSync(join(clone, 'dist'))).toBe(false);
    const r = await installStep(clone, { INPUT_INSTALL: 'source' });
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`edgeplane ${version}`);
    expect(spawnSync(r.bin, ['--version'], { encoding: 'utf8' }).stdout.trim()).toBe(version);
  }, 300_000);
});
