import type { Db } from '../../store/db.js';
import { getRun, listRuns, listStacks, requestSync } from '../../store/sync-runs.js';
import { STACK_NAME } from '../../contract/stack-name.js';
import { RUN_ID, runResponse, stackResponse } from '../routes/sync-runs.js';

/** A stack's summary and a run, exactly as the API's sync record answers them (docs/api.md). */
export type StackView = ReturnType<typeof stackResponse>;
export type RunView = ReturnType<typeof runResponse>;

/** What the pages read of the record of syncs, always for one account. */
export interface StackRecords {
  stacks(accountId: string, opts: { after?: string; limit: number }): Promise<{ items: StackView[]; more: boolean }>;
  stack(accountId: string, name: string): Promise<StackView | null>;
  runs(accountId: string, stack: string, opts: { before?: string; limit: number }): Promise<{ items: RunView[]; more: boolean }>;
  run(accountId: string, id: string): Promise<RunView | null>;
  requestSync(accountId: string, stack: string, who: string): Promise<void>;
}

/** The record of syncs read through the same queries and response shapes as its API routes. */
export function stackRecords(db: Db, baseUrl: () => string): StackRecords {
  const validStack = (s: string | undefined) => s === undefined || STACK_NAME.test(s);
  return {
    async stacks(accountId, opts) {
      if (!validStack(opts.after)) return { items: [], more: false };
      const { rows, more } = await listStacks(db, accountId, opts);
      return { items: rows.map((r) => stackResponse(r, baseUrl())), more };
    },
    async stack(accountId, name) {
      if (!STACK_NAME.test(name)) return null;
      const row = (await listStacks(db, accountId, { limit: 1, stack: name })).rows[0];
      return row ? stackResponse(row, baseUrl()) : null;
    },
    async runs(accountId, stack, opts) {
      if (!STACK_NAME.test(stack) || (opts.before !== undefined && !RUN_ID.test(opts.before))) return { items: [], more: false };
      const { rows, more } = await listRuns(db, accountId, { stack, limit: opts.limit, beforeId: opts.before });
      return { items: rows.map((r) => runResponse(r, baseUrl(), false)), more };
    },
    async run(accountId, id) {
      if (!RUN_ID.test(id)) return null;
      const row = await getRun(db, accountId, id);
      return row ? runResponse(row, baseUrl(), true) : null;
    },
    async requestSync(accountId, stack, who) {
      if (!STACK_NAME.test(stack)) return;
      await requestSync(db, accountId, stack, who);
    },
  };
}
