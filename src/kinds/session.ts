import { enabled, uint32 } from './fields.js';
import type { Body, JSONSchema, KindRuntimeConfig, ModuleContext } from './types.js';

/** Fields shared by the session modules (oauth, saml, oidc). */
export const sessionFields: Record<string, JSONSchema> = {
  enabled,
  options_passthrough: { type: 'boolean' },
  cookie_prefix: { type: 'string', pattern: '^[A-Za-z0-9.]{1,64}$', 'x-rule': 'must be 1 to 64 letters, digits and dots' },
  inactivity_timeout: uint32,
  maximum_duration: uint32,
};

export const sessionDefaults: Body = { enabled: true, options_passthrough: false };

/** The cookie prefix default for the reconciler: the same rule as `defaultCookiePrefix`. */
export const sessionConfigDefaults = (config: KindRuntimeConfig): Body => ({ cookie_prefix: `${config.vendorPrefix}.` });

export const sessionResponseOrder = ['enabled', 'options_passthrough', 'cookie_prefix', 'inactivity_timeout', 'maximum_duration'];

/** The cookie prefix default is the deployment's vendor prefix and a dot, read when the module is written. */
export function defaultCookiePrefix(m: Body, ctx: ModuleContext): void {
  m.cookie_prefix ??= `${ctx.config.vendorPrefix}.`;
}
