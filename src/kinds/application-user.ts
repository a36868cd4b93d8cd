import type { Body, JSONSchema, KindDef } from './types.js';

const text = (maxBytes: number): JSONSchema => ({ type: 'string', maxBytes });
const timestamp: JSONSchema = {
  type: 'string',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$',
  'x-rule': 'must be an RFC 3339 timestamp such as 2026-01-31T12:00:00Z',
};

/** The provider's URL identifies it (an OIDC issuer, an OAuth provider's site); the name is a label. */
export function providerKey(body: Body): string {
  return `${providerUrlKey((body.identity_provider as { url: string }).url)} ${body.provider_user_id as string}`;
}

/** A provider URL as users are told apart by: scheme and host in lower case, no trailing slash. */
export function providerUrlKey(given: string): string {
  let url = given.trim();
  try {
    const u = new URL(url);
    url = (u.origin + u.pathname).replace(/\/+$/, '');
  } catch { /* validated before; keep as given */ }
  return url;
}

/**
 * End users who signed in through a route's OAuth / OIDC / SAML module. The public API reads and
 * deletes them; they are written only by the operator path (src/service/routes/application-users.ts),
 * which goes through the generic create / update with these fields.
 */
export const applicationUser: KindDef = {
  name: 'applicationUser',
  title: 'application user',
  idPrefix: 'usr',
  path: '/app/users',
  listKey: 'application_users',
  operations: ['get', 'list', 'delete'],
  fields: {
    identity_provider: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxBytes: 255 },
        url: { type: 'string', minLength: 1, maxBytes: 1024, pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#][^\\s]*$', 'x-rule': 'must be an absolute http or https URL' },
      },
      required: ['name', 'url'],
      additionalProperties: false,
    },
    provider_user_id: { type: 'string', minLength: 1, maxBytes: 255 },
    username: text(255),
    email: text(320),
    name: text(255),
    last_active: timestamp,
    last_login: timestamp,
  },
  required: ['identity_provider', 'provider_user_id'],
  immutable: ['provider_user_id'],
  responseOrder: ['identity_provider', 'provider_user_id', 'username', 'email', 'name', 'last_active', 'last_login'],
  uniques: [{
    scope: 'applicationUser',
    what: 'identity provider and provider_user_id',
    perAccount: true,
    values: (body) => [providerKey(body)],
    code: 'ERR_CONFLICT',
    conflict: () => 'an application user with this identity provider and provider_user_id already exists',
  }],
};
