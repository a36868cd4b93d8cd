import type { KindRuntimeConfig } from '../../../kinds/types.js';
import { liveView, type LiveView } from '../live-view.js';
import { NormMemo } from '../normalize.js';
import { Protection } from '../protect.js';
import type { Threshold } from '../safety.js';
import type { DesiredObject, Identities, ObservedObject } from '../state.js';
import type { Paired } from './match.js';

export interface DiffOptions {
  stack: string;
  /** The API URL or `embedded:<dir>`, recorded in the plan. */
  target: string;
  /** Take over unmanaged objects that collide with manifest objects (same hostport, same CA). */
  adopt?: boolean;
  /** The command to show for adopting (the CLI knows the directory and flags). */
  adoptCommand?: string;
  threshold?: Threshold;
  /** Deployment settings some defaults depend on (the session cookie prefix). */
  config?: KindRuntimeConfig;
  /**
   * Watch's incremental plans: only these desired objects are planned; the others are matched
   * (so references to them read as their ids) but not compared. The caller vouches that they were
   * found unchanged before and have not changed since.
   */
  only?: Identities;
  /** When `observed` is a part of what was read (with `only`): every object read (the ids that exist, the safety threshold's counts), answered from indexes the caller keeps. */
  live?: LiveView;
  /**
   * For each of `desired`, by its place: this stack's live objects marked with its identity, as the
   * caller paired them while reading (`pairWith`), and which of them it found unchanged then. It
   * must have seen every object of `observed`. Matching then reads the pair at hand (it indexes
   * the live objects only for renames), and the steps phase settles those found unchanged once it
   * has checked that their references still read the same.
   */
  paired?: Paired;
  /** Filled with the identities of the planned objects found unchanged (no step, no warning). */
  settled?: Set<string>;
  /** Selectors of protected objects (the stack file's `safety.protect`), besides `protect: true` in manifests. */
  protect?: readonly string[];
  /** `--allow-protected-changes`: protected objects may be deleted (pruned, destroyed) and replaced. */
  allowProtected?: boolean;
  /** `--target`: plan only the objects these selectors name (`scopePlan`). */
  targets?: readonly string[];
  /** `plan --destroy` / `destroy`: delete every object the stack owns; the manifests only say what is protected. */
  destroy?: boolean;
}

/**
 * What every phase of the planner reads and none modifies: the manifests' objects (none when the
 * stack is destroyed), the live ones, the options, which objects are protected, and the memo of
 * normal forms (a cache: kept across plans by watch).
 */
export interface PlanContext {
  readonly desired: readonly DesiredObject[];
  readonly observed: readonly ObservedObject[];
  /** Every object read (`observed` is a part of it in watch's incremental plans). */
  readonly live: LiveView;
  readonly opts: Readonly<DiffOptions>;
  readonly protection: Protection;
  readonly memo: NormMemo;
}

/** The context of one plan: with `destroy`, the manifests only say what is protected (nothing is planned from them). */
export function planContext(desired: readonly DesiredObject[], observed: readonly ObservedObject[], opts: Readonly<DiffOptions>, memo = new NormMemo('plan')): PlanContext {
  const protection = new Protection(opts.protect, desired, opts.allowProtected);
  return { desired: opts.destroy ? [] : desired, observed, live: opts.live ?? liveView(observed), opts, protection, memo };
}
