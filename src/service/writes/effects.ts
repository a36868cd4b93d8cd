import type { Body, KindDef } from '../../kinds/types.js';
import type { Queryable } from '../../store/db.js';
import { enqueueJob } from '../../store/job-queue.js';
import { assertHostportsNotBanned } from '../routes/abuse-reports.js';

/** The write an effect belongs to: what is stored, what was stored before, which object. */
export interface EffectContext { op: 'create' | 'update'; id: string; body: Body; previous?: Body }

/**
 * Carries out a kind's declared effects (`KindDef.effects`) inside its write transaction: the
 * checks before the row is written (`before`), the follow-ups after (`after`).
 */
export async function runEffects(q: Queryable, kind: KindDef, phase: 'before' | 'after', ctx: EffectContext): Promise<void> {
  for (const effect of kind.effects ?? []) {
    if (effect.type === 'hostportsNotBanned' && phase === 'before') {
      await assertHostportsNotBanned(q, added(ctx, effect.field));
    } else if (effect.type === 'enqueueJob' && phase === 'after' && ctx.op === effect.on) {
      await enqueueJob(q, effect.job, ctx.id);
    }
  }
}

/** The values of a list field the write adds (case-insensitive): only those are checked again. */
function added(ctx: EffectContext, field: string): string[] {
  const before = new Set(((ctx.previous?.[field] as string[] | undefined) ?? []).map((h) => h.toLowerCase()));
  return ((ctx.body[field] as string[] | undefined) ?? []).filter((h) => !before.has(h.toLowerCase()));
}
