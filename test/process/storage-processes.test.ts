import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadMigrations } from '../../src/store/migrate.js';
import { openPglite } from '../../src/store/pglite.js';
import { openPostgres } from '../../src/store/postgres.js';
import { ENGINES } from '../helpers/service.js';

const root = new URL('../../', import.meta.url).pathname;

/** Runs a script in a separate Node process (tsx) and resolves with its output. */
function runNode(script: string, env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('PGlite directory lock, across processes', () => {
  it('refuses a second process while the first holds the directory, naming the holder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ep-lock-'));
    const db = await openPglite(dir);
    try {
      db.lock!.setUrl('http://127.0.0.1:9999');
      const second = await runNode(
        `import { openPglite } from './src/store/pglite.ts';
         try { await openPglite(${JSON.stringify(dir)}); console.log('OPENED'); process.exit(0); }
         catch (e) { console.log(e.name + ': ' + e.message); process.exit(3); }`,
      );
      expect(second.code).toBe(3);
      expect(second.out).toContain('LockHeldError');
      expect(second.out).toContain(`in use by process ${process.pid}`);
      expect(second.out).toContain('http://127.0.0.1:9999');
      expect(second.out).not.toContain('OPENED');
      // The holder is unharmed.
      await db.query('SELECT 1');
    } finally {
      await db.close();
    }
    expect(existsSync(join(dir, 'lock'))).toBe(false);
  });

  it('recovers the lock of a process that died, and keeps the data it committed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ep-lock-'));
    const crashed = await runNode(
      `import { openPglite } from './src/store/pglite.ts';
       import { migrate } from './src/store/migrate.ts';
       const db = await openPglite(${JSON.stringify(dir)});
       await migrate(db);
       await db.query("INSERT INTO accounts (id, name) VALUES ('acct_survivor', 'x')");
       process.kill(process.pid, 'SIGKILL');`,
    );
    expect(crashed.code).toBeNull();
    const stale = JSON.parse(readFileSync(join(dir, 'lock'), 'utf8'));
    expect(stale.pid).not.toBe(process.pid);
    const db = await openPglite(dir);
    try {
      const { rows } = await db.query('SELECT name FROM accounts WHERE id = $1', ['acct_survivor']);
      expect(rows).toEqual([{ name: 'x' }]);
      expect(JSON.parse(readFileSync(join(dir, 'lock'), 'utf8')).pid).toBe(process.pid);
    } finally {
      await db.close();
    }
  });
});

describe.runIf(ENGINES.includes('postgres'))('migrations across processes on PostgreSQL', () => {
  it('two processes starting at once apply each migration exactly once', async () => {
    const schema = 'ep_mig_' + Math.random().toString(36).slice(2, 10);
    const url = process.env.DATABASE_URL!;
    const script = `import { openPostgres } from './src/store/postgres.ts';
      import { migrate } from './src/store/migrate.ts';
      const db = await openPostgres(${JSON.stringify(url)}, { schema: ${JSON.stringify(schema)} });
      console.log(JSON.stringify(await migrate(db))); await db.close();`;
    const [a, b] = await Promise.all([runNode(script), runNode(script)]);
    expect(a.code).toBe(0);
    expect(b.code).toBe(0);
    const applied = [...JSON.parse(a.out.trim().split('\n').pop()!), ...JSON.parse(b.out.trim().split('\n').pop()!)];
    expect(applied.sort()).toEqual(loadMigrations().map((m) => m.name).sort());
    const db = await openPostgres(url);
    await db.query(`DROP SCHEMA ${schema} CASCADE`);
    await db.close();
  });
});
