import { ApiClient } from '../../src/client/api-client.js';
import { listsTransport } from '../../src/client/lists-transport.js';
import type { Body } from '../../src/kinds/types.js';
import { preparePlan, type PlanInput, type Prepared } from '../../src/reconciler/plan/prepare.js';

/**
 * The plan `plan` makes (`preparePlan`, pages paired as they arrive), from list bodies held in
 * memory instead of a service: the golden scenarios and the planner tests run the users' path.
 * `pageSize` small makes the pages arrive one by one; `hints: false` plans without what was
 * worked out while they arrived (`PrepareOptions.hints`).
 */
export async function planFromState(input: PlanInput, lists: Record<string, Body[]>, target: string, opts: { pageSize?: number; hints?: boolean } = {}): Promise<Prepared> {
  const client = new ApiClient(listsTransport(target, lists, opts));
  try {
    return await preparePlan(input, client, { hints: opts.hints });
  } finally {
    await client.close();
  }
}
