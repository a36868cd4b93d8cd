import { described, object, secret, strings } from './fields.js';
import { defaultCookiePrefix, sessionConfigDefaults, sessionDefaults, sessionFields, sessionResponseOrder } from './session.js';
import type { ModuleDef } from './types.js';

function issuerProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL, like https://accounts.example.com';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http(s) URL';
  if (url.username || url.password) return 'may not hold credentials';
  // An empty one (`…/?`, `…/#`) is not in `search` / `hash`, but is in the text.
  if (url.search || url.hash || /[?#]/.test(value)) return 'may not have a query or fragment (it is the base URL for discovery)';
  return null;
}

export const oidc: ModuleDef = {
  name: 'oidc',
  request: described(object({
    ...sessionFields,
    issuer: described({ type: 'string', minLength: 1, maxBytes: 2048 }, 'The OpenID provider\'s URL, the base of its discovery document (https, no query or fragment).', ['https://accounts.google.com']),
    client_id: described({ type: 'string', minLength: 1, maxBytes: 512 }, 'The client ID of your application at the OpenID provider.'),
    client_secret: described(secret, 'The client secret of your application: {env: NAME} or {file: path}, never written in the manifest. Stored, never returned; kept while issuer and client_id stay the same.'),
    scopes: described(strings(100), 'Scopes to request besides openid (at most 100). Default: none.', [['profile', 'email']]),
  }, ['issuer', 'client_id']), 'OpenID Connect sign-in: users sign in with an OpenID provider before they reach the route (at most one of oauth, saml, oidc).'),
  defaults: { ...sessionDefaults, scopes: [] },
  writeOnly: ['client_secret'],
  // A stored secret belongs to one application at one provider.
  secretBoundTo: { client_secret: ['issuer', 'client_id'] },
  exclusiveGroup: 'authentication',
  role: 'guard',
  risk: 'security',
  reconcile: { configDefaults: sessionConfigDefaults, sets: ['scopes'] },
  check(m, ctx) {
    const problem = issuerProblem(m.issuer as string);
    if (problem) ctx.report(['oidc', 'issuer'], problem);
    // Without the stored module (`validate`) a left-out secret may yet be carried over: the service decides.
    if (!('client_secret' in m) && ctx.stored) {
      const changed = ctx.stored.previous?.client_secret !== undefined;
      ctx.report(['oidc', 'client_secret'], `is required${changed ? ' (the stored secret is not kept when issuer or client_id changes)' : ''}`);
    }
    (m.scopes as string[]).forEach((s, i) => {
      if (!/^[\x21-\x7e]+$/.test(s)) ctx.report(['oidc', 'scopes', i], 'must be one scope without spaces');
    });
  },
  prepare(m, ctx) {
    defaultCookiePrefix(m, ctx);
  },
  responseOrder: [...sessionResponseOrder, 'issuer', 'client_id', 'scopes'],
};
