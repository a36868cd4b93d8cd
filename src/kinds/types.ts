import type { ErrorCode } from '../contract/errors.js';

export type JSONSchema = Record<string, unknown>;
export type Operation = 'create' | 'get' | 'list' | 'update' | 'delete';
/** The stored form of an object or module: request-form field names, secrets included. */
export type Body = Record<string, unknown>;

/** A field holding the id (or ids) of another object. */
export interface RefDef {
  /** Field of the stored body (or module) holding one id, or a list of ids when `many`. */
  field: string;
  /** Name of the target kind (`kinds/registry.ts`). */
  kind: string;
  many?: boolean;
  /**
   * Only ids with this prefix name objects this service stores and are checked; other ids are kept
   * as given (failover children may be backend kinds this service does not manage).
   */
  onlyPrefix?: string;
  /** In responses the ids become `Ref`s (`{id, uri}`) under this name; absent: ids as they are. */
  outField?: string;
  /** Following these references may never lead back to the object itself. */
  acyclic?: boolean;
  /** When false the target is not stored here (IP policies): ids are not checked or recorded. */
  stored?: boolean;
}

/**
 * What a check sees: where to report, and — in the service only — what is stored. Checks are the
 * rules the service enforces beyond the JSON Schema that need no database, no I/O and nothing
 * generated: the service runs them on every write (`src/service/writes/resources.ts`) and `edgeplane
 * validate` on every manifest object (`src/reconciler/manifests/validate.ts`), so a pull request
 * shows what an apply would be refused for.
 */
export interface CheckContext {
  /**
   * Reports a broken rule. `path` is the field inside the object, a module's name first
   * (`['oauth', 'provider', 'github', 'scopes', 0]`); the service's message is `<path>: <rule>`
   * (`oauth.provider.github.scopes[0]: …`). The service throws the first report as an ApiError
   * (`code`, default ERR_VALIDATION); `validate` collects every report, so a check must carry on
   * sensibly after one. `at` places the problem elsewhere in the manifest than `path` (a map key
   * repeated ignoring case: the key, with `key`).
   */
  report(path: (string | number)[], rule: string, opts?: { code?: ErrorCode; at?: (string | number)[]; key?: boolean }): void;
  /**
   * The service's knowledge of what is stored; absent in `validate`, which has no state. With it,
   * `previous` is the stored object (kind checks) or module (module checks), absent on create, and
   * `carried` the write-only paths the service carried over from it. Without it a write-only field
   * the body leaves out may still be carried over on apply, so rules on a missing secret are left
   * to the service.
   */
  stored?: { previous?: Body; carried: string[] };
}

/** What a module's normaliser sees besides the hook context. */
export interface ModuleContext extends HookContext {
  /** The module as stored before this write, if it was configured. */
  previousModule?: Body;
  /** Write-only paths whose value was carried over from `previousModule` (the request left them out). */
  carried: string[];
}

/** A value that must be unique within a scope, enforced by the `unique_keys` primary key. */
export interface UniqueDef {
  /** Scope name; with `perParent` the scope is per parent object (route match within its edge). */
  scope: string;
  /** What the value is, as a message names it ("hostport", "match"). */
  what: string;
  perParent?: boolean;
  /** The scope is per account (an application user's provider identity), not service-wide. */
  perAccount?: boolean;
  /** The values, from plain fields only: the reconciler gives it their normal form and no modules. */
  values(body: Body): string[];
  /** The 409's error code and message for a value already taken. */
  code: ErrorCode;
  conflict(value: string): string;
  /**
   * The values are `host:port` DNS names, where `*.example.com` covers every name under
   * example.com: a value may not cover, or be covered by, a value of another account (same code;
   * the message must not name the other value). Values of one account may overlap.
   */
  wildcardOverlaps?: { conflict(value: string): string };
}

/**
 * An effect of a write, carried out by the service inside the write transaction:
 * - `hostportsNotBanned`: the values a write adds to `field` (hostports) are checked against the
 *   hostnames banned after abuse reports, before the object is stored;
 * - `enqueueJob`: a job of type `job` for the object is queued after it is created, committing
 *   with it (no object is ever left unqueued).
 */
export type KindEffect =
  | { type: 'hostportsNotBanned'; field: string }
  | { type: 'enqueueJob'; job: string; on: 'create' };

/** What a hook sees: the operation, the input, the previous stored body. */
export interface HookContext {
  op: 'create' | 'update';
  accountId: string;
  /** The stored body being written; hooks may derive fields into it. */
  body: Body;
  previous?: Body;
  /** Fields present in the request body (after unwrapping). */
  input: Body;
  id: string;
  parentId?: string;
  publicBaseUrl: string;
  config: KindRuntimeConfig;
}

/**
 * How the reconciler compares, exports and adopts a kind or module: declared here, with the kind,
 * read by `src/reconciler/plan/normalize.ts` (one table for diff and export). Field paths are
 * dotted and may hold `*` for every key of an object (`provider.*.email_addresses`).
 */
export interface ReconcileRules {
  /** Compared as sets: order ignored, duplicates dropped (hostports, CA ids, email lists). */
  sets?: string[];
  /** Named value normalisers (`src/kinds/normalizers.ts`) per field: `{ ca_pem: 'pem' }`. */
  normalize?: Record<string, NormalizerName>;
  /** Defaults the service fills inside nested objects that exist (`provider.*.scopes: []`). */
  fill?: Record<string, unknown>;
  /** Defaults that depend on the deployment (session cookie prefix `<vendor>.`). */
  configDefaults?(config: KindRuntimeConfig): Body;
}

/** The value normalisers a description may name; implemented once in `src/kinds/normalizers.ts`. */
export type NormalizerName = 'pem' | 'lowercase' | 'lowercase-keys' | 'lowercase-items';

export interface KindRuntimeConfig {
  /** Lower-case vendor prefix of the deployment (cookie prefix default). */
  vendorPrefix: string;
}

/** A module slot (edge: mutual_tls …; route: backend, oauth …): one row of data. */
export interface ModuleDef {
  name: string;
  /** Request form (PUT body, or the slot's value in create / PATCH bodies). */
  request: JSONSchema;
  refs?: RefDef[];
  /** Values the service fills in when a field is omitted (also used by the reconciler). */
  defaults?: Body;
  /**
   * Secrets: stored, never returned. Dotted paths reach into nested objects
   * (`provider.github.client_secret`). A write that leaves one out keeps the stored value, see
   * `secretBoundTo`.
   */
  writeOnly?: string[];
  /**
   * A stored secret is carried over only while these fields (dotted paths, compared after
   * `normalize`) keep their value: a webhook secret belongs to its provider, an OAuth secret to its
   * client_id. Absent: carried over whenever the request leaves it out.
   */
  secretBoundTo?: Record<string, string[]>;
  /** Fields computed by the service; never accepted, always returned. */
  derived?: string[];
  /** The response schema of each derived field (`src/kinds/response-schemas.ts`). */
  derivedSchemas?: Record<string, JSONSchema>;
  /** At most one module of a group may be configured on one object. */
  exclusiveGroup?: string;
  /** Canonical form of the request (case folding) before secrets are compared and carried over. */
  normalize?(module: Body): Body;
  /**
   * The module's rules beyond its schema, on the stored form before derivations (defaults under
   * the request's canonical form, see `moduleCheckForm`; in `validate` secrets may be references
   * such as `{env: NAME}`, whose value is unknown: a rule on a secret's value applies to strings
   * only). Synchronous, pure, never modifies the module. Runs before `prepare`.
   */
  check?(module: Body, ctx: CheckContext): void;
  /** Derives fields into the checked module (the stored form); may throw an ApiError for rules that need the store. */
  prepare?(module: Body, ctx: ModuleContext): Body | void | Promise<Body | void>;
  /** Response fields in order (after refs are mapped); default: request fields then derived. */
  responseOrder?: string[];
  /** How the reconciler compares this module (sets, named normalisers). */
  reconcile?: ReconcileRules;
  /**
   * Fail-closed ordering for the planner: a `guard` module (auth, IP restriction) is put before and
   * removed after any `traffic` module (backend) of the same object.
   */
  role?: 'guard' | 'traffic';
  /** What a change of this module can break (`Risk`): plans show such changes first. */
  risk?: Risk;
}

/**
 * What a change can break, for the order in which plans show changes (`src/reconciler/render/`):
 * `traffic` (which hostnames are served, where requests go) or `security` (who may pass, TLS).
 * A field or module with no risk declared is shown after creates.
 */
export type Risk = 'traffic' | 'security';

/** Account flags an operator grants (`accounts` columns); a kind may require one. */
export type AccountFlag = 'abuseReports';

export interface KindDef {
  /** Registry name, camelCase: `failoverBackend`. */
  name: string;
  /** Human name used in messages: `failover backend`. */
  title: string;
  /** The manifest `kind:` of the reconciler, where managed by it. */
  manifestKind?: string;
  idPrefix: string;
  /** URL path of the collection; a parent's id appears as `:<parent.param>`. */
  path: string;
  /** Key of the list envelope. */
  listKey?: string;
  parent?: { kind: string; param: string; field: string };
  /**
   * How many objects of this kind one parent may hold, and how many bytes their stored bodies may
   * hold together (as JSON text): the parent embeds them, so this bounds its responses.
   */
  perParent?: { count: number; bytes: number };
  operations: Operation[];
  /** Every operation of the kind answers 403 to an account without this flag. */
  requires?: AccountFlag;
  /** Plain (non-module) fields of the request form, as JSON Schema properties. */
  fields: Record<string, JSONSchema>;
  required?: string[];
  /** Settable on create only (a change means replace). */
  immutable?: string[];
  /** Computed by the service, returned, never accepted. */
  derived?: string[];
  /** The response schema of each derived field (`src/kinds/response-schemas.ts`). */
  derivedSchemas?: Record<string, JSONSchema>;
  /** Stored, never returned. */
  writeOnly?: string[];
  /** Order of the plain fields in responses (fields absent from the body are left out). */
  responseOrder: string[];
  refs?: RefDef[];
  uniques?: UniqueDef[];
  modules?: ModuleDef[];
  /** Child kinds returned inside this one, in creation order: `{ routes: 'httpsEdgeRoute' }`. */
  embeds?: Record<string, string>;
  /** Values the service gives a plain field the request leaves out (the reconciler restores them). */
  defaults?: Body;
  /** Plain fields whose change can break traffic or security (`Risk`); modules declare their own. */
  risk?: Record<string, Risk>;
  /** How the reconciler compares this kind (sets, named normalisers). */
  reconcile?: ReconcileRules;
  /**
   * Fields whose value identifies an existing object a manifest may mean (same CA certificate, a
   * shared hostport): an unmanaged match is offered for adoption, another stack's is a conflict.
   */
  collisionKeys?: string[];
  /**
   * For a top-level kind with no such identifying field: with `plan --adopt`, an unmanaged object
   * whose fields and metadata are all the same as a new manifest object's (references compared
   * once their targets are matched) is adopted. Without `--adopt` equal content is no conflict: two
   * alike objects are allowed.
   */
  adoptByContent?: boolean;
  /** Kind-specific behaviour, by name. */
  hooks?: {
    /**
     * The kind's own rules beyond its schema, on the body being written (modules aside): pure,
     * synchronous, never modifies it (see `CheckContext`). Runs before `prepare`.
     */
    check?(body: Body, ctx: CheckContext): void;
    /** Derives fields of the checked stored body before it is written; may throw for rules that need the store. */
    prepare?(ctx: HookContext): void | Promise<void>;
  };
  /**
   * What a write of this kind does beyond storing it, declared here and carried out by the
   * service (`src/service/writes/effects.ts`) in the write's transaction: kinds never touch the store.
   */
  effects?: KindEffect[];
}
