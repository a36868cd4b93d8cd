import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
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

const npm = (args: string[], cwd = ROOT) => spawnSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' }, timeout: 240_000 });

beforeAll(() => {
  const packed = npm(['pack', '--pack-destination', work]);
  if (packed.status !== 0) throw new Error(`npm pack failed:\n${packed.stderr}`);
  // Dependencies from the npm cache when they are there (CI's `npm ci` filled it).
  install = npm(['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', join(work, `edgeplane-${version}.tgz`)], work);
}, 300_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the packed package', () => {
  it('ships the compiled CLI, its schemas, docs and licence, and nothing else of the repository (no tests, bench, CI or sources)', () => {
    const listed = npm(['pack', '--dry-run', '--json', '--ignore-scripts']);
    const files = (JSON.parse(listed.stdout) as { files: { path: string }[] }[])[0].files.map((f) => f.path);
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

  it("the CI workflows' install step, run as written on a clone of the repository (no dist/), gives a CLI that starts", () => {
    const steps = ['github-workflow.yml', 'drift-workflow.yml'].flatMap((f) => {
      const jobs = (parse(readFileSync(join(ROOT, 'examples', 'ci', f), 'utf8')) as { jobs: Record<string, { steps: { run?: string }[] }> }).jobs;
      return Object.values(jobs).flatMap((j) => j.steps.map((st) => st.run ?? '').filter((r) => r.includes('.edgeplane')));
    });
    expect(new Set(steps).size).toBe(1); // one install, the same in every job
    const ci = join(work, 'ci');
    const clone = spawnSync('git', ['clone', '--quiet', ROOT, join(ci, '.edgeplane')], { encoding: 'utf8' });
    expect(clone.status, clone.stderr).toBe(0);
    expect(existsSync(join(ci, '.edgeplane', 'dist'))).toBe(false);
    const globalPrefix = join(ci, 'prefix');
    const run = spawnSync('bash', ['-c', steps[0]], {
      cwd: ci, encoding: 'utf8', timeout: 240_000,
      env: { ...process.env, npm_config_prefix: globalPrefix, npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' },
    });
    expect(run.status, run.stderr).toBe(0);
    const v = spawnSync(join(globalPrefix, 'bin', 'edgeplane'), ['--version'], { cwd: ci, encoding: 'utf8' });
    expect(v.stdout.trim(), v.stderr).toBe(version);
  }, 300_000);
});
