import { createHash, randomUUID } from 'node:crypto';
import { ApiRequestError, type ApiClient } from '../../client/api-client.js';
import { canonicalJson } from '../../util/canonical-json.js';
import type { Plan, Step } from '../plan/types.js';
import { DEFAULT_PARALLELISM, runDag, type DagEvent, type DagResult } from './dag.js';
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
  /** Asked before each step starts: false stops starting steps (a stack lock that ran out: `HeldStackLock.valid`). */
  mayStart?: () => boolean;
  /** Names this run in its creates' idempotency keys (default: a new random one). */
  runId?: string;
}

/** An object a step found changed by someone else since the plan read it (412): the step and its dependents did not run. */
export interface StaleObject { step: string; identity: string; id: string }

export interface ApplyResult extends DagResult {
  /** Identity → id of every object this apply created. */
  created: Record<string, string>;
  /** Objects changed since the plan read them: their branches of the plan were stopped. */
  stale: StaleObject[];
}

/** A write refused with 412: the object is not the version the plan read. */
export class StaleObjectError extends Error {
  constructor(readonly step: Step) {
    super(`${step.object.identity} (${step.object.id}) changed since the plan read it: not overwritten (412); plan again`);
    this.name = 'StaleObjectError';
  }
}

/** Apply failures that say which step and what the API answered, without a stack trace. */
function failure(step: Step, method: string, path: string, res: HttpResponse): Error {
  return new ApiRequestError(method, path, res.status, res.body);
}

/** Secret values stand in a create's key by their fingerprints: the key reveals nothing of them. */
const FINGERPRINTS = { value: (_identity: string, _path: string, token: { fingerprint?: string }) => `fingerprint:${token.fingerprint ?? ''}` };

/**
 * The `Idempotency-Key` of a create: this run, the step, and the exact request (ids of the objects
 * it refers to filled in, secrets by fingerprint). A retry of the step in this run sends the same
 * key, so the service answers a create it already made (its response lost) with that response; a
 * later run makes its own keys (an object deleted since must be created again, not answered from a
 * day-old response).
 */
export function createKey(runId: string, plan: Plan, step: Step, ids: ReadonlyMap<string, string>): string {
  const req = materializeRequest(step, ids, FINGERPRINTS as never);
  const what = canonicalJson({ run: runId, stack: plan.stack, step: step.id, method: req.method, path: req.path, body: req.body ?? null });
  return `edgeplane-${createHash('sha256').update(what).digest('base64url')}`;
}

/**
 * Executes a plan's steps as a DAG: ids of created objects flow to the steps that wait for them,
 * writes are retried by `withRetry`. Every create carries an Idempotency-Key, so a create whose
 * outcome is unknown (a lost connection, a 5xx) is sent again as it was and never makes a
 * duplicate. Writes to an object the plan read a version of carry `If-Match`; the steps of one
 * object run one after another, each naming the version the previous one left.
 */
export async function applyPlan(plan: Plan, opts: ApplyOptions): Promise<ApplyResult> {
  const ids = new Map<string, string>();
  const created: Record<string, string> = {};
  const stale: StaleObject[] = [];
  const { client } = opts;
  const runId = opts.runId ?? randomUUID();
  /** The version each conditional write names next, by object id. */
  const versions = new Map(Object.entries(plan.versions ?? {}));
  /** The last write of each conditionally written object: the next one waits for it. */
  const chains = new Map<string, Promise<unknown>>();

  const send = async (step: Step, ctx: { retrying(i: { attempt: number; delayMs: number; reason: string }): void; signal: AbortSignal }) => {
    const req = materializeRequest(step, ids, opts.secrets);
    const isCreate = req.method === 'POST' && !!step.yields;
    const objectId = step.object.id;
    const conditional = !isCreate && req.method !== 'POST' && objectId !== undefined && versions.has(objectId);
    const headers: Record<string, string> = {};
    if (isCreate) headers['idempotency-key'] = createKey(runId, plan, step, ids);
    const res = await withRetry(
      async () => {
        client.counts[req.method] = (client.counts[req.method] ?? 0) + 1;
        if (conditional) headers['if-match'] = versions.get(objectId!)!;
        return client.transport.request(req.method, req.path, req.body, headers);
      },
      { ...opts.retry, onRetry: (i) => ctx.retrying(i), signal: ctx.signal },
    );
    if (res.status === 412 && conditional) {
      stale.push({ step: step.id, identity: step.object.identity, id: objectId! });
      throw new StaleObjectError(step);
    }
    // A delete that finds nothing has reached its goal (gone already, or a retried DELETE that had succeeded).
    if (res.status === 404 && req.method === 'DELETE') return;
    if (res.status < 200 || res.status >= 300) throw failure(step, req.method, req.path, res);
    if (conditional) {
      const etag = res.headers.etag;
      if (typeof etag === 'string' && etag) versions.set(objectId!, etag);
      else versions.delete(objectId!); // a service that gave none: later writes go unconditioned
    }
    if (step.yields) {
      const id = (res.body as { id?: unknown } | undefined)?.id;
      if (typeof id !== 'string') throw new Error(`${req.method} ${req.path}: the response has no id`);
      ids.set(step.yields, id);
      created[step.yields] = id;
    }
  };

  const runStep: Parameters<typeof runDag<Step>>[1] = (step, ctx) => {
    const objectId = step.object.id;
    if (objectId === undefined || !versions.has(objectId) || step.request.method === 'POST') return send(step, ctx);
    const run = (chains.get(objectId) ?? Promise.resolve()).catch(() => {}).then(() => send(step, ctx));
    chains.set(objectId, run);
    return run;
  };

  const result = await runDag(plan.steps, runStep, {
    parallelism: opts.parallelism ?? DEFAULT_PARALLELISM,
    onEvent: opts.onEvent,
    signal: opts.signal,
    mayStart: opts.mayStart,
  });
  return { ...result, created, stale };
}
