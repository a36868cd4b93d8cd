import { rotateSecrets, secretsStatus } from '../../service/writes/secrets.js';
import { keyRingFor, stateDirOf } from '../../embedded/state-dir.js';
import type { Output } from '../output.js';
import { withDb } from './with-db.js';

/** `admin secrets status`: sealed values per key id, and those still in plain text. */
export async function secretsStatusCommand(out: Output, flags: { json?: boolean; state?: string }) {
  const status = await withDb({ stateDir: flags.state }, (db) => secretsStatus(db, keyRingFor(db.engine, stateDirOf({ stateDir: flags.state }))));
  if (flags.json) return out.json(status);
  if (!status.keys.length && !status.plain) return out.line('no secrets stored, and no key ring');
  for (const k of status.keys) {
    const notes = [k.newest ? 'newest: seals new values' : '', k.in_ring ? '' : 'NOT in the key ring'].filter(Boolean).join(', ');
    out.line(`${k.key_id}  ${k.values} value${k.values === 1 ? '' : 's'}${notes ? `  (${notes})` : ''}`);
  }
  if (status.plain) out.line(`plain text  ${status.plain} value${status.plain === 1 ? '' : 's'}  (sealed at the next start with a key ring)`);
}

/**
 * `admin secrets rotate`: every sealed value re-wrapped under the newest key of the ring, a batch a
 * transaction, while the service runs; run it again after an interruption. Then the older keys may
 * be removed from the ring.
 */
export async function secretsRotateCommand(out: Output, flags: { batch?: string; json?: boolean; state?: string }) {
  const batch = flags.batch === undefined ? undefined : Number(flags.batch);
  if (batch !== undefined && (!Number.isInteger(batch) || batch < 1 || batch > 10_000)) throw new Error(`--batch: a whole number from 1 to 10000, got ${JSON.stringify(flags.batch)}`);
  const result = await withDb({ stateDir: flags.state }, async (db) => {
    const ring = keyRingFor(db.engine, stateDirOf({ stateDir: flags.state }));
    if (!ring) throw new Error('no key ring: set EDGEPLANE_SECRETS_KEYS (docs/operations.md, "Secrets at rest")');
    const r = await rotateSecrets(db, ring, {
      batch,
      progress: (p) => { if (!flags.json) out.line(`re-sealed ${p.done} object${p.done === 1 ? '' : 's'}, ${p.remaining} to go`); },
    });
    return { newest: ring.newest.id, ...r };
  });
  if (flags.json) return out.json({ key_id: result.newest, objects: result.done, remaining: result.remaining, refused: result.refused.map((e) => e.message) });
  for (const e of result.refused) out.line(`refused: ${e.message}`);
  if (result.remaining) throw new Error(`${result.remaining} object${result.remaining === 1 ? '' : 's'} still need${result.remaining === 1 ? 's' : ''} an older key; keep it in the key ring`);
  out.line(`every sealed value now opens with key ${result.newest}: older keys may be removed from the key ring`);
}
