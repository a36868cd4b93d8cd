import { sharedAjv } from '../../contract/validation.js';
import { PLAN_FORMAT_VERSION, type Plan } from '../plan/types.js';

/** The plan as saved by `plan --out` and read by `apply`: versioned, stable order, no secret values. */
export function renderJson(plan: Plan): string {
  return JSON.stringify(plan, null, 2) + '\n';
}

/** Reads a saved plan; refuses other format versions rather than guessing. */
export function parsePlan(text: string): Plan {
  const plan = JSON.parse(text) as Plan;
  if (!plan || typeof plan !== 'object' || plan.formatVersion !== PLAN_FORMAT_VERSION) {
    const found = (plan as Partial<Plan> | null)?.formatVersion;
    const why = typeof found === 'number' ? `it was saved by ${found < PLAN_FORMAT_VERSION ? 'an older' : 'a newer'} edgeplane` : 'it has no formatVersion';
    throw new Error(`not an edgeplane plan of format version ${PLAN_FORMAT_VERSION} (formatVersion: ${JSON.stringify(found)}): ${why}; run plan again with this version (plan --out FILE) and apply that`);
  }
  // A file edited by hand, cut short or made by something else: said plainly, before anything reads it.
  const validate = (planValidator ??= sharedAjv().compile(PLAN_SCHEMA));
  if (!validate(plan)) {
    const e = validate.errors![0];
    throw new Error(`not a plan edgeplane can apply: ${e.instancePath || '(the top level)'} ${e.message}; run plan again (plan --out FILE) and apply that`);
  }
  return plan;
}

const str = { type: 'string' };
const strings = { type: 'array', items: str };
const count = { type: 'integer', minimum: 0 };
const stepObject = { type: 'object', required: ['kind', 'identity', 'name'], properties: { kind: str, identity: str, name: str, id: str, parent: str } };
/** The shape `apply --plan` relies on (`Plan` in plan/types.ts); values inside bodies and changes are the plan's own. */
const PLAN_SCHEMA = {
  type: 'object',
  required: ['formatVersion', 'stack', 'target', 'observed', 'steps', 'summary', 'warnings', 'conflicts', 'blocked'],
  properties: {
    formatVersion: { const: PLAN_FORMAT_VERSION },
    stack: str,
    environment: str,
    target: str,
    observed: { type: 'object', additionalProperties: str },
    versions: { type: 'object', additionalProperties: str },
    steps: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'action', 'object', 'request', 'changes', 'dependsOn'],
        properties: {
          id: str,
          action: { enum: ['create', 'update', 'replace', 'delete', 'module.put', 'module.delete'] },
          object: stepObject,
          module: str,
          request: { type: 'object', required: ['method', 'path'], properties: { method: { enum: ['POST', 'PATCH', 'PUT', 'DELETE'] }, path: str } },
          changes: { type: 'array', items: { type: 'object', required: ['path'], properties: { path: str, sensitive: { type: 'boolean' }, drift: { const: true } } } },
          dependsOn: strings,
          yields: str,
          reason: str,
          patch: { type: 'array', items: { type: 'object', required: ['op', 'path'], properties: { op: str, path: str } } },
          before: { type: 'object' },
          after: { type: 'object' },
          cascade: { type: 'array', items: stepObject },
          drift: { const: true },
        },
      },
    },
    summary: { type: 'object', required: ['create', 'update', 'replace', 'delete'], properties: { create: count, update: count, replace: count, delete: count } },
    warnings: strings,
    conflicts: { type: 'array', items: { type: 'object', required: ['identity', 'kind', 'id', 'message'], properties: { identity: str, kind: str, id: str, message: str } } },
    blocked: { type: 'array', items: { type: 'object', required: ['kind', 'owned', 'changed'], properties: { kind: str, owned: count, changed: count } } },
    protectedChanges: { type: 'array', items: { type: 'object', required: ['step', 'identity', 'id', 'action'], properties: { step: str, identity: str, id: str, action: { enum: ['delete', 'replace'] } } } },
    partial: { type: 'object', required: ['targets', 'created', 'omitted'], properties: { targets: strings, created: strings, omitted: count, waiting: count } },
    destroy: { const: true },
    policy: {
      type: 'object', required: ['checked', 'outcomes', 'results'],
      properties: {
        checked: strings,
        outcomes: { type: 'array', items: { type: 'object', required: ['policy', 'denied', 'warned', 'overridable'], properties: { policy: str, denied: count, warned: count, overridable: { type: 'boolean' }, override: { type: 'object', required: ['reason'], properties: { reason: str } } } } },
        results: { type: 'array', items: { type: 'object', required: ['policy', 'rule', 'severity', 'message'], properties: { policy: str, rule: count, severity: { enum: ['deny', 'warn'] }, message: str } } },
        omitted: count,
      },
    },
  },
};
let planValidator: ReturnType<ReturnType<typeof sharedAjv>['compile']> | undefined;
