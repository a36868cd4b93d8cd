import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KeyRing } from '../service/writes/sealing.js';

import { STATE_KEYS_FILE } from './state-dir-path.js';

export { DEFAULT_STATE_DIR, ensureStateDir, hasEmbeddedState, STATE_KEYS_FILE, stateDirOf } from './state-dir-path.js';

/**
 * The state directory's own key ring (`secrets.keys`, mode 0600), made with one random key the
 * first time: with no key ring configured, the embedded database's secrets are sealed by a key
 * that lives beside it (docs/operations.md: a copy of the directory then carries the key too; give
 * EDGEPLANE_SECRETS_KEYS to keep them apart).
 */
export function stateKeyRing(dir: string): KeyRing {
  const file = join(dir, STATE_KEYS_FILE);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true });
    const { text } = KeyRing.generate('state-1');
    try {
      writeFileSync(file, `# edgeplane: the key ring of this state directory's secrets (the first key seals); keep it private\n${text}`, { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // another process made it first
    }
  }
  if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return KeyRing.parse(readFileSync(file, 'utf8'), file);
}

/**
 * The key ring of a service on `engine`: EDGEPLANE_SECRETS_KEYS when set; else, on the embedded
 * database, the state directory's own (an in-memory database: a key that is not kept); else none
 * (PostgreSQL without a key ring stores secrets as they come; `serve` warns).
 */
export function keyRingFor(engine: 'pglite' | 'postgres', stateDir: string | null, env: NodeJS.ProcessEnv = process.env): KeyRing | undefined {
  const setting = env.EDGEPLANE_SECRETS_KEYS;
  if (setting) return KeyRing.fromSetting(setting);
  if (engine !== 'pglite') return undefined;
  return stateDir === null ? KeyRing.generate('memory').ring : stateKeyRing(stateDir);
}
