import { ApiRequestError, type ApiClient } from '../../client/api-client.js';
import type { Plan, Step } from '../plan/types.js';
import { DEFAULT_PARALLELISM, runDag, type DagEvent, type DagResult } from './dag.js';
import { findCreated } from './find-created.js';
import { materializeRequest, type SecretLookup } from './materialize.js';
import { withRetry, type HttpResponse, type RetryOptions } from './retry.js';

export interface ApplyOptions {
  client: ApiClient;
  secrets: SecretLookup;
  parallelism?: number;
  onEvent?: (e: DagEvent<Step>) => void;
  /** Retry tuning (tests make waits instant). */
  retry?: Pick<RetryOptions, 'attempts' | 'baseMs' | 'capMs' | 'maxRetryAfterMs' | 'sleep' | 'random' | 'now'>;
  signal?: AbortSignal;
}

export interface ApplyResult extends DagResult {
  /** Identity → id of every object this apply created. */
  created: Record<string, string>;
}

/** Apply failures that say which step and what the API answered, without a stack trace. */
function failure(step: Step, method: string, path: string, res: HttpResponse): Error {
  return new ApiRequestError(method, path, res.status, res.body);
}

/**
 * Executes a plan's steps as a DAG: ids of created objects flow to the steps that wait for them,
 * writes are retried by `withRetry`, and a create whose outcome is unknown is looked for by its
 * marker before it is sent again.
 */
export async function applyPlan(plan: Plan, opts: ApplyOptions): Promise<ApplyResult> {
  const ids = new Map<string, string>();
  const created: Record<string, string> = {};
  const { client } = opts;

  const runStep = async (step: Step, ctx: { retrying(i: { attempt: number; delayMs: number; reason: string }): void; signal: AbortSignal }) => {
    const req = materializeRequest(step, ids, opts.secrets);
    const isCreate = req.method === 'POST' && !!step.yields;
    const res = await withRetry(
      async () => {
        client.counts[req.method] = (client.counts[req.method] ?? 0) + 1;
        return client.transport.request(req.method, req.path, req.body);
      },
      {
        ...opts.retry,
        create: isCreate,
        resolveUnknown: isCreate
          ? async () => {
            const found = await findCreated(client, step, plan.stack, req.path);
            return found ? { status: 201, headers: {}, body: found } : undefined;
          }
          : undefined,
        onRetry: (i) => ctx.retrying(i),
        signal: ctx.signal,
      },
    );
    // A delete that finds nothing has reached its goal (gone already, or a retried DELETE that had succeeded).
    if (res.status === 404 && req.method === 'DELETE') return;
    if (res.status < 200 || res.status >= 300) throw failure(step, req.method, req.path, res);
    if (step.yields) {
      const id = (res.body as { id?: unknown } | undefined)?.id;
      if (typeof id !== 'string') throw new Error(`${req.method} ${req.path}: the response has no id`);
      ids.set(step.yields, id);
      created[step.yields] = id;
    }
  };

  const result = await runDag(plan.steps, runStep, {
    parallelism: opts.parallelism ?? DEFAULT_PARALLELISM,
    onEvent: opts.onEvent,
    signal: opts.signal,
  });
  return { ...result, created };
}
