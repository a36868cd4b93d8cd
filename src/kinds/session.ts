import { described, enabled, uint32 } from './fields.js';
import type { Body, JSONSchema, KindRuntimeConfig, ModuleContext } from './types.js';

/** Fields shared by the session modules (oauth, saml, oidc). */
export const sessionFields: Record<string, JSONSchema> = {
  enabled,
  options_passthrough: described({ type: 'boolean' }, 'Let HTTP OPTIONS requests through without signing in (CORS preflight requests carry no cookie). Default: false.'),
  cookie_prefix: described({ type: 'string', pattern: '^[A-Za-z0-9.]{1,64}$', 'x-rule': 'must be 1 to 64 letters, digits and dots' }, 'Prefix of the session cookie\'s name (1-64 letters, digits and dots). Default: the deployment\'s vendor prefix and a dot.'),
  inactivity_timeout: described(uint32, 'Seconds without a request after which the session ends and the user signs in again. Default: the service\'s own.'),
  maximum_duration: described(uint32, 'Seconds after which a session ends however active, and the user signs in again. Default: the service\'s own.'),
};

export const sessionDefaults: Body = { enabled: true, options_passthrough: false };

/** The cookie prefix default for the reconciler: the same rule as `defaultCookiePrefix`. */
export const sessionConfigDefaults = (config: KindRuntimeConfig): Body => ({ cookie_prefix: `${config.vendorPrefix}.` });

export const sessionResponseOrder = ['enabled', 'options_passthrough', 'cookie_prefix', 'inactivity_timeout', 'maximum_duration'];

/** The cookie prefix default is the deployment's vendor prefix and a dot, read when the module is written. */
export function defaultCookiePrefix(m: Body, ctx: ModuleContext): void {
  m.cookie_prefix ??= `${ctx.config.vendorPrefix}.`;
}
