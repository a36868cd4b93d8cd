import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plan } from '../../src/cli/commands/plan.js';
import { EXIT } from '../../src/cli/exit.js';
import { openTarget } from '../../src/cli/target.js';
import { parsePlan } from '../../src/reconciler/render/json.js';
import { applySequentially } from '../helpers/apply-plan.js';
import { capture, exitCode } from '../helpers/capture.js';

// The embedded target is PGlite in the state directory, whatever DATABASE_URL says for other suites.
const saved = process.env.DATABASE_URL;
beforeAll(() => { delete process.env.DATABASE_URL; });
afterAll(() => { if (saved !== undefined) process.env.DATABASE_URL = saved; });

describe('embedded target (no --api-url)', () => {
  it('plans against an empty database where the directory has none (writing nothing); a writing command provisions an account and key, remembered', async () => {
    const state = mkdtempSync(join(tmpdir(), 'edgeplane-state-'));
    const dir = mkdtempSync(join(tmpdir(), 'edgeplane-m-'));
    writeFileSync(join(dir, 'fo.yaml'), 'kind: FailoverBackend\nname: primary\nbackends: [bkdhr_2Bc4xYzAbCdEfGhIjKlMnOpQr12]\n');
    const out = capture();
    expect(await exitCode(() => plan(out, dir, { state, detailedExitcode: true, out: join(dir, 'plan.json') }))).toBe(EXIT.changes);
    expect(out.text()).toContain(`on embedded:${state}`);
    expect(out.errors.join('\n')).toMatch(/no embedded state at .*: planning against an empty database/);
    expect(readdirSync(state)).toEqual([]);

    // The plan saved from the empty database applies to the directory (empty too until now).
    const client = await openTarget({ state }, { out: capture() });
    try {
      await applySequentially(client, parsePlan(readFileSync(join(dir, 'plan.json'), 'utf8')));
    } finally {
      await client.close();
    }
    const creds = JSON.parse(readFileSync(join(state, 'embedded.json'), 'utf8'));
    expect(creds.api_key).toMatch(/^ep_/);
    const again = capture();
    expect(await exitCode(() => plan(again, dir, { state, detailedExitcode: true }))).toBe(EXIT.ok);
    expect(JSON.parse(readFileSync(join(state, 'embedded.json'), 'utf8'))).toEqual(creds);
  });
});
