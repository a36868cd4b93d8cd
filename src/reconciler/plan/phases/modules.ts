import { moduleCheckForm } from '../../../kinds/check.js';
import type { Body, CheckContext, ModuleDef } from '../../../kinds/types.js';
import { formatPath } from '../../manifests/problems.js';
import { diffValues } from '../changes.js';
import { same, type Normal } from '../normalize.js';
import { stepPatch } from '../patch.js';
import type { DesiredObject } from '../state.js';
import type { Step, StepObject } from '../types.js';
import type { Match, Matched } from './match.js';
import { materialize, refDeps } from './refs.js';
import { objectPath } from '../../../contract/paths.js';

/** The module steps of an existing object, the changed modules its PATCH carries instead, and what to warn of. */
export interface ModuleSteps { inPatch: ModuleDef[]; steps: Step[]; warnings: string[] }

/**
 * Module steps of an existing object. PATCH cannot delete a module, so removals are DELETEs;
 * changes ride in the PATCH when there is one (one atomic write with the marker), else PUTs.
 * Fail closed: traffic modules come off before guards change and go on after them; swapping one
 * exclusive module for another (oauth → oidc) takes the traffic module off, swaps, puts it back.
 * Which modules guard and which carry traffic is the kind's description (`role`, `exclusiveGroup`).
 */
export function moduleSteps(m: Matched, dec: Match, want: Normal, have: Normal, needPatch: boolean, object: () => StepObject): ModuleSteps {
  const d = dec.d;
  const mods = d.kind.modules ?? [];
  const added = mods.filter((x) => want.modules[x.name] && !same(want.modules[x.name], have.modules[x.name]));
  const removed = mods.filter((x) => have.modules[x.name] && !want.modules[x.name]);
  if (!added.length && !removed.length) return { inPatch: [], steps: [], warnings: [] };
  const warnings = nothingStoredWarnings(d, added.filter((x) => !have.modules[x.name]));
  const swapped = added.filter((x) => x.exclusiveGroup && removed.some((r) => r.exclusiveGroup === x.exclusiveGroup));
  const guardsChange = [...added, ...removed].some((x) => x.role === 'guard');
  const traffic = mods.filter((x) => x.role === 'traffic' && have.modules[x.name]);
  const bounce = swapped.length ? traffic.filter((x) => !removed.includes(x)) : [];
  const steps: Step[] = [];
  const path = (x: ModuleDef) => `${objectPath(d.kind, dec.o!.id, dec.o!.parentId ?? null)}/${x.name}`;
  const put = (x: ModuleDef, deps: string[], reason?: string) => {
    const id = `${d.identity}:module.put:${x.name}`;
    const changes = diffValues(x.name, have.modules[x.name], want.modules[x.name]);
    steps.push({
      id, action: 'module.put', object: object(), module: x.name,
      request: { method: 'PUT', path: path(x), body: materialize(m, d.body[x.name]) },
      changes, dependsOn: [...deps, ...refDeps(m, d.body, [x.name])], ...(reason ? { reason } : {}),
      ...stepPatch(pick(have, [x.name]), pick(want, [x.name]), changes),
    });
    return id;
  };
  const del = (x: ModuleDef, deps: string[], reason?: string) => {
    const id = `${d.identity}:module.delete:${x.name}`;
    steps.push({
      id, action: 'module.delete', object: object(), module: x.name,
      request: { method: 'DELETE', path: path(x) },
      changes: [{ path: x.name, before: '(configured)', after: '(removed)' }], dependsOn: deps, ...(reason ? { reason } : {}),
      ...stepPatch(pick(have, [x.name]), {}, []),
    });
    return id;
  };
  const replacedBy = (x: ModuleDef) => removed.find((r) => r.exclusiveGroup === x.exclusiveGroup)!.name;
  const swapNames = swapped.map((x) => `${replacedBy(x)} → ${x.name}`).join(', ');
  const off = bounce.map((x) => del(x, [], `fail closed: ${x.name} is taken off while ${swapNames} is swapped, and put back after`));
  const trafficOff = removed.filter((x) => x.role === 'traffic').map((x) => del(x, []));
  const guardOff = removed.filter((x) => x.role !== 'traffic').map((x) => del(x, [...off, ...trafficOff]));
  const swappedOn = swapped.map((x) => put(x, guardOff, `replaces ${replacedBy(x)}: at most one ${x.exclusiveGroup} module may exist`));
  const rest = added.filter((x) => !swapped.includes(x) && !bounce.includes(x));
  // With a PATCH, the changed modules ride in it: one atomic write (with the marker's fingerprints).
  const inPatch = needPatch ? rest : [];
  const guardsOn = [...swappedOn];
  if (!needPatch) {
    for (const x of rest.filter((y) => y.role === 'guard')) guardsOn.push(put(x, guardOff));
    for (const x of rest.filter((y) => y.role !== 'guard')) {
      const after = x.role === 'traffic' && guardsChange;
      put(x, after ? [...guardsOn, ...guardOff] : [], after ? 'fail closed: attached after the guard modules change' : undefined);
    }
  }
  for (const x of bounce) {
    if (want.modules[x.name]) put(x, guardsOn, `fail closed: ${x.name} goes back on after ${swapNames}`);
  }
  return { inPatch, steps, warnings };
}

/**
 * Rules that depend on what is stored, for modules written where nothing is (a new object, or a
 * module the object lacks): no secret can be carried over, so one the manifest leaves out
 * (`client_id` without `client_secret`) makes the service refuse the step. `validate` cannot know
 * that (it has no state): said here, as a warning naming the rule, before apply.
 */
export function nothingStoredWarnings(d: DesiredObject, mods: ModuleDef[]): string[] {
  const warnings: string[] = [];
  for (const m of mods) {
    const given = d.body[m.name];
    if (!m.check || !given || typeof given !== 'object') continue;
    const form = moduleCheckForm(m, given as Body);
    const reports = (stored?: NonNullable<CheckContext['stored']>) => {
      const out: string[] = [];
      m.check!(form, { stored, report: (path, rule) => void out.push(`${formatPath(path)}: ${rule}`) });
      return out;
    };
    const unknown = new Set(reports()); // what validate reported already, or left to the service
    for (const r of reports({ carried: [] })) {
      if (!unknown.has(r)) warnings.push(`${d.identity}: ${r} — nothing is stored yet to carry it over from, so the service will refuse this step`);
    }
  }
  return warnings;
}

/** The fields and modules `keys` of a normal form (those it has), for a step's `before` / `after`. */
export function pick(n: Normal, keys: string[]): Body {
  const out: Body = {};
  for (const k of keys) {
    const v = k in n.fields ? n.fields[k] : n.modules[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}
