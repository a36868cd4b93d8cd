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
  return plan;
}
