import type { Position } from '../manifests/problems.js';
import { celValue } from './cel.js';
import { emptyCounts, failedRules, type Activation } from './evaluate.js';
import { POLICY_KINDS } from './schema.js';
import type { ObjectAction, Policy, PolicySet } from './types.js';

/** One example of a policy, checked: whether it came out as the policy's author says. */
export interface ExampleResult {
  policy: string;
  expect: 'pass' | 'fail';
  index: number;
  ok: boolean;
  /** What happened: the rules that failed, or why the example could not be run. */
  detail: string;
  source: Position;
}

const ACTIONS: readonly ObjectAction[] = ['create', 'update', 'replace', 'delete', 'none'];
const INPUT_KEYS = ['object', 'live', 'action', 'changes', 'plan'];

/**
 * `edgeplane policy test`: each policy against its own examples, as conftest's `verify` runs a
 * policy's tests. An example is what a rule sees: `object` (and optionally `live`, `action`,
 * `changes`, `plan`), or the object alone (a mapping with `kind`). Every `pass` example must pass
 * every rule; every `fail` example must fail at least one, and be matched by the policy at all.
 */
export function runExamples(set: PolicySet): ExampleResult[] {
  const out: ExampleResult[] = [];
  for (const p of set.policies) {
    for (const expect of ['pass', 'fail'] as const) {
      p.examples[expect].forEach((example, index) => {
        const source = p.doc.locate(['examples', expect, index]);
        const result = (ok: boolean, detail: string) => out.push({ policy: p.name, expect, index, ok, detail, source });
        const ctx = activation(example);
        if (typeof ctx === 'string') return result(false, ctx);
        if (!p.planLevel && !matched(p, ctx.object)) {
          return result(expect === 'pass', `not matched by the policy (match.kinds${p.selectors ? ', match.selectors' : ''}): ${expect === 'pass' ? 'passes' : 'a fail example must be one the policy checks'}`);
        }
        const failed = failedRules(p, ctx);
        const what = failed.map((f) => `rules[${f.rule.index}] ${f.error ? `could not be evaluated (${f.error})` : `failed ("${f.rule.message}")`}`).join('; ');
        if (expect === 'pass') result(!failed.length, failed.length ? what : 'passes every rule');
        else result(failed.length > 0, failed.length ? what : 'passed every rule');
      });
    }
  }
  return out;
}

function matched(p: Policy, object: Record<string, unknown>): boolean {
  const kind = typeof object.kind === 'string' ? object.kind : undefined;
  if (p.kinds && (!kind || !p.kinds.has(kind))) return false;
  if (!p.selectors) return true;
  const identity = typeof object.identity === 'string' ? object.identity : kind && typeof object.name === 'string' ? `${kind}/${object.name}` : undefined;
  return !!identity && p.selectors.some((s) => s.matches(identity));
}

/** An example as the variables a rule reads, or what is wrong with it. */
function activation(example: unknown): Activation | string {
  if (!example || typeof example !== 'object' || Array.isArray(example)) return 'an example is a mapping: the object (with kind), or object, live, action, changes, plan';
  const e = example as Record<string, unknown>;
  const input = 'kind' in e && !INPUT_KEYS.some((k) => k in e) ? { object: e } : e;
  const extra = Object.keys(input).filter((k) => !INPUT_KEYS.includes(k));
  if (extra.length) return `${extra.join(', ')} ${extra.length === 1 ? 'is' : 'are'} not what a rule reads (object, live, action, changes, plan; or the object alone, with kind)`;
  const object = input.object ?? {};
  if (!object || typeof object !== 'object' || Array.isArray(object)) return 'object must be a mapping';
  const action = (input.action ?? 'create') as ObjectAction;
  if (!ACTIONS.includes(action)) return `action must be one of ${ACTIONS.join(', ')}`;
  const changes = input.changes ?? [];
  if (!Array.isArray(changes) || changes.some((c) => typeof c !== 'string')) return 'changes must be a list of field paths';
  const plan = emptyCounts();
  if (input.plan !== undefined) {
    if (!input.plan || typeof input.plan !== 'object') return 'plan must be a mapping of actions (create, update, replace, delete) to counts per kind';
    for (const [a, kinds] of Object.entries(input.plan as Record<string, unknown>)) {
      if (!(a in plan)) return `plan.${a}: not an action (create, update, replace, delete)`;
      if (!kinds || typeof kinds !== 'object') return `plan.${a} must be a mapping of kinds to counts`;
      for (const [k, n] of Object.entries(kinds as Record<string, unknown>)) {
        if (!POLICY_KINDS.includes(k)) return `plan.${a}.${k}: not a kind (${POLICY_KINDS.join(', ')})`;
        if (!Number.isSafeInteger(n) || (n as number) < 0) return `plan.${a}.${k} must be a whole number`;
        plan[a][k] = BigInt(n as number);
      }
    }
  }
  const none = () => undefined;
  return {
    object: celValue(object, none) as Record<string, unknown>,
    live: input.live === undefined ? null : celValue(input.live, none),
    action,
    changes: changes as string[],
    plan,
  };
}
