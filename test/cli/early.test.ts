import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { earlySpare } from '../../src/cli/early.js';
import { cleanupDirs, tempDir } from '../helpers/reconcile.js';

afterAll(cleanupDirs);

describe('the embedded service thread started before the CLI loads (bin/edgeplane.js)', () => {
  const withDb = tempDir('ep-early-');
  mkdirSync(join(withDb, 'pgdata'));
  const empty = tempDir('ep-early-');
  const env = {}; // no API, no database URL, not CI

  it('starts for apply and destroy, and for a plan on a directory that holds a database (plan only reads)', () => {
    expect(earlySpare(['apply', 'stack', '--auto-approve'], env)).toEqual({ readOnly: false });
    expect(earlySpare(['destroy', 'stack', '--state', empty], env)).toEqual({ readOnly: false });
    expect(earlySpare(['plan', 'stack', '--state', withDb], env)).toEqual({ readOnly: true });
    expect(earlySpare(['plan', 'stack', `--state=${withDb}`], env)).toEqual({ readOnly: true });
    expect(earlySpare(['plan', 'stack'], { EDGEPLANE_STATE: withDb })).toEqual({ readOnly: true });
  });

  it('does not for a plan that runs on no database, an API, a saved plan, help, another command, or a CI job without a state directory', () => {
    expect(earlySpare(['plan', 'stack', '--state', empty], env)).toBeUndefined();
    expect(earlySpare(['apply', 'stack', '--api-url', 'https://api.example'], env)).toBeUndefined();
    expect(earlySpare(['apply', 'stack', '--api-url=https://api.example'], env)).toBeUndefined();
    expect(earlySpare(['apply', 'stack'], { EDGEPLANE_API_URL: 'https://api.example' })).toBeUndefined();
    expect(earlySpare(['apply', 'stack'], { DATABASE_URL: 'postgres://db/x' })).toBeUndefined();
    expect(earlySpare(['apply', '--plan', 'saved.json'], env)).toBeUndefined();
    expect(earlySpare(['apply', '--help'], env)).toBeUndefined();
    expect(earlySpare(['apply', 'stack', '--state'], env)).toBeUndefined();
    expect(earlySpare(['validate', 'stack'], env)).toBeUndefined();
    expect(earlySpare(['-q', 'apply', 'stack'], env)).toBeUndefined();
    expect(earlySpare(['apply', 'stack'], { CI: 'true' })).toBeUndefined();
    expect(earlySpare(['apply', 'stack', '--state', empty], { CI: 'true' })).toEqual({ readOnly: false });
  });
});
