import type { PlanPolicy, StepPolicy } from '../policy/types.js';

/**
 * Plan data: the versioned contract between `plan` (this module's producer, `diff`) and `apply`
 * (which executes steps), and what the JSON renderer writes. A plan holds no secret: request
 * bodies carry `{"$secret": <source>, "fingerprint": …}` where a secret goes; apply reads the
 * source (environment variable or file), checks the fingerprint, and sends the value.
 */
/** 2: `observed` fingerprints hash what the plan was made from (request form and metadata), not the whole response. */
export const PLAN_FORMAT_VERSION = 2 as const;

export type Action = 'create' | 'update' | 'replace' | 'delete' | 'module.put' | 'module.delete';

export interface StepObject {
  /** Registry name of the kind (`certificateAuthority`, `httpsEdgeRoute`). */
  kind: string;
  /** Manifest identity (`CertificateAuthority/root`, `HTTPSEdge/web/routes/api`). */
  identity: string;
  name: string;
  /** Id of the existing object; absent for creates (apply learns it from the response). */
  id?: string;
  /** Identity of the parent for child kinds (routes). */
  parent?: string;
}

export interface HttpRequest {
  method: 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** May hold `{<identity>.id}` placeholders for objects created earlier in the plan. */
  path: string;
  /** Request body; may hold placeholders (in reference fields) and secret sources. */
  body?: unknown;
}

/** One changed field, before → after, for people (secrets shown as "(sensitive)"). */
/** The path of the change a plan shows when only an object's ownership marker changes. */
export const MARKER_CHANGE = 'metadata (ownership marker)';

export interface Change {
  path: string;
  before?: unknown;
  after?: unknown;
  /** The value is a secret: only its fingerprint changed (or it was added / removed). */
  sensitive?: boolean;
  /**
   * Drift: the live value moved away from what the stack last applied, while the manifests kept
   * theirs (the ownership marker's hash of the applied value is the manifests' still). Absent:
   * the manifests changed, or the marker records nothing to tell (a marker with no hashes).
   */
  drift?: true;
}

export interface Step {
  /** Stable within a plan: `CertificateAuthority/root:create`, `…/routes/api:module.put:oidc`. */
  id: string;
  action: Action;
  object: StepObject;
  /** Module name for module steps. */
  module?: string;
  request: HttpRequest;
  changes: Change[];
  dependsOn: string[];
  /** For create / replace: the identity whose new id this step's response (`.id`) supplies. */
  yields?: string;
  /** Why the step exists or sits where it does; for humans, never read by apply. */
  reason?: string;
  /**
   * Steps that change an existing object (update, module.put, module.delete): RFC 6902 operations
   * from the live body to the desired one, over the fields that change. For programs that read
   * plans; never read by apply.
   */
  patch?: PatchOperation[];
  /** Those fields as they are (absent: not set), in the form of `changes` (references by identity, secrets masked). */
  before?: Record<string, unknown>;
  /** Those fields as the step leaves them. */
  after?: Record<string, unknown>;
  /**
   * For a delete: this stack's children the service deletes with the object (an edge's routes),
   * in list order. No request is sent for them; the plan names and counts each, and the safety
   * threshold counts them as deleted.
   */
  cascade?: StepObject[];
  /** The stack's policies' results about this step's object (failures only; docs/policies.md). */
  policy?: StepPolicy;
  /** Some of `changes` are drift (`Change.drift`): the step undoes changes made outside the manifests. */
  drift?: true;
}

/** One RFC 6902 operation, as fast-json-patch's `compare` makes them. */
export type PatchOperation =
  | { op: 'add' | 'replace' | 'test'; path: string; value: unknown }
  | { op: 'remove'; path: string }
  | { op: 'move' | 'copy'; path: string; from: string };

export interface StepPatch { patch: PatchOperation[]; before: Record<string, unknown>; after: Record<string, unknown> }

/** An object the manifests mean that already exists outside this stack. */
export interface Conflict {
  identity: string;
  kind: string;
  id: string;
  owner: 'unmanaged' | 'stack';
  /** The other stack, when owner is `stack`. */
  stack?: string;
  message: string;
  /** For unmanaged objects: the exact command that adopts them. */
  adopt?: string;
}

/**
 * A kind whose share of changed owned objects trips the safety threshold. Counts are of ownership
 * identities (`safetyBlocks`): duplicates of one identity are one owned object, and deleting a
 * duplicate while a copy stays is not a change.
 */
export interface SafetyBlock { kind: string; owned: number; changed: number; deletes: number; updates: number }

export interface PlanSummary { create: number; update: number; replace: number; delete: number }

/** A delete or replace of a protected object (`protect: true`, or `safety.protect` of the stack file). */
export interface ProtectedChange {
  /** The step that deletes or replaces it (a delete may take the protected object with its parent). */
  step: string;
  identity: string;
  id: string;
  action: 'delete' | 'replace';
}

/** A plan of part of the stack (`--target`). */
export interface PartialPlan {
  /** The selectors, as given. */
  targets: string[];
  /** Identities outside the targets whose creation the plan includes: the targets refer to them. */
  created: string[];
  /** Steps of the whole stack's plan that this plan leaves out. */
  omitted: number;
  /** Steps of the targets left out because they wait for a step outside them (each has a warning). */
  waiting?: number;
}

export interface Plan {
  formatVersion: typeof PLAN_FORMAT_VERSION;
  stack: string;
  /** The API URL, or `embedded:<dir>`. */
  target: string;
  /** Object id → fingerprint of the object as read (`fingerprintObserved`); apply refuses when any differs (stale). */
  observed: Record<string, string>;
  /**
   * Object id → ETag as read, for the objects whose writes apply makes conditional (`If-Match`):
   * one changed by someone else since is not overwritten. Absent from plans of services that give
   * no ETags.
   */
  versions?: Record<string, string>;
  steps: Step[];
  summary: PlanSummary;
  warnings: string[];
  conflicts: Conflict[];
  /** Non-empty: apply refuses without --force. */
  blocked: SafetyBlock[];
  // The fields below are present only when they say something, so that whole-stack plans read as before.
  /** Present and non-empty: apply refuses without --allow-protected-changes. */
  protectedChanges?: ProtectedChange[];
  /** Present when the plan covers only the objects `--target` selects: apply changes nothing else. */
  partial?: PartialPlan;
  /** Present for `plan --destroy` / `destroy`: the plan deletes every object the stack owns. */
  destroy?: true;
  /** Present when the stack has policies: what they found (a denial not overridden: apply refuses). */
  policy?: PlanPolicy;
  /** The environment of edgeplane.yaml the manifests were expanded for (`--env`), when there is one. */
  environment?: string;
}

/** Whether the plan changes anything, or (with --target) leaves out changes of the targets that wait for others. */
export function hasChanges(plan: Plan): boolean {
  return plan.steps.length > 0 || !!plan.partial?.waiting;
}
