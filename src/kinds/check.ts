import { ApiError } from '../contract/errors.js';
import { formatPath } from './paths.js';
import type { Body, CheckContext, ModuleDef } from './types.js';

/**
 * The service's side of `CheckContext`: the first report is thrown as the API error
 * `<field>: <rule>`, so a check words each rule once for both the service and `validate`.
 */
export function throwingChecks(stored: NonNullable<CheckContext['stored']>): CheckContext {
  return {
    stored,
    report(path, rule, opts = {}) {
      throw new ApiError(opts.code ?? 'ERR_VALIDATION', `${formatPath(path)}: ${rule}`);
    },
  };
}

/**
 * A module as its check sees it: the request's canonical form over the module's defaults — the
 * stored form before carried-over secrets and derivations. Shared, not copied: callers that will
 * modify it copy it first.
 */
export function moduleCheckForm(mod: ModuleDef, given: Body): Body {
  return { ...(mod.defaults ?? {}), ...(mod.normalize ? mod.normalize(given) : given) };
}
