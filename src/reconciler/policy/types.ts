import type { Selector } from '../plan/selectors.js';
import type { SourceDoc } from '../manifests/load.js';
import type { Compiled } from './cel.js';

export type Severity = 'deny' | 'warn';

/** What a plan does to an object, as a rule reads it (`action`). */
export type ObjectAction = 'create' | 'update' | 'replace' | 'delete' | 'none';

export interface PolicyRule {
  /** Place in `rules` (what results name: `rules[2]`). */
  index: number;
  expression: string;
  message: string;
  severity: Severity;
  compiled: Compiled;
}

/** One `kind: Policy` document, compiled. */
export interface Policy {
  name: string;
  description?: string;
  overridable: boolean;
  /** Manifest kinds it matches; undefined: every kind. */
  kinds?: ReadonlySet<string>;
  selectors?: Selector[];
  condition?: Compiled;
  rules: PolicyRule[];
  /** Every expression reads only `plan`, and no kind or selector is named: checked once per plan. */
  planLevel: boolean;
  /** Its document (positions are found only when a message needs one: they may take the file parsed again). */
  doc: SourceDoc;
  examples: { pass: unknown[]; fail: unknown[] };
}

export interface PolicySet { policies: Policy[]; files: string[] }

/** `--override-policy NAME --reason TEXT`: a named policy's denials let through for this run. */
export interface PolicyOverride { policy: string; reason: string }

/** One failed rule (or one that could not be evaluated) on one object, or on the plan. */
export interface PolicyResult {
  policy: string;
  /** The rule's place in its policy's `rules`. */
  rule: number;
  severity: Severity;
  message: string;
  /** The object (absent: a rule over the whole plan). */
  identity?: string;
  action?: ObjectAction;
  /** The step the result is shown with (absent: the object has no step, or a rule over the plan). */
  step?: string;
  /** The expression could not be evaluated (a field read without `has()`): counted as failed. */
  error?: string;
  /** The policy is overridden for this run (`--override-policy`). */
  overridden?: true;
}

/** Per policy with a failure: how many, whether it may be overridden, and its override. */
export interface PolicyOutcome {
  policy: string;
  denied: number;
  warned: number;
  overridable: boolean;
  override?: { reason: string };
}

/** What a plan carries of its policies (`Plan.policy`): present when the stack has policies. */
export interface PlanPolicy {
  /** The names of the policies checked. */
  checked: string[];
  /** The policies with a failure, denials first. */
  outcomes: PolicyOutcome[];
  /** The failures, denials first (at most `RESULTS_MAX`; `omitted` says how many more). */
  results: PolicyResult[];
  omitted?: number;
}

/** A step's own results (`Step.policy`). */
export type StepPolicy = Omit<PolicyResult, 'identity' | 'step'>[];
