import { dnsNameProblem } from './dns.js';
import { described, forbidden, object, secret, strings, uint32 } from './fields.js';
import { defaultCookiePrefix, sessionConfigDefaults, sessionDefaults, sessionFields, sessionResponseOrder } from './session.js';
import type { Body, CheckContext, JSONSchema, ModuleDef } from './types.js';

/** The eight identity providers; only github has teams and organizations. */
export const OAUTH_PROVIDERS = ['github', 'facebook', 'microsoft', 'google', 'linkedin', 'gitlab', 'twitch', 'amazon'];
const WITH_TEAMS = 'github';

const TEAM = /^[A-Za-z0-9][A-Za-z0-9-]{0,38}\/[A-Za-z0-9_.-]{1,100}$/;
const ORG = /^[A-Za-z0-9][A-Za-z0-9-]{0,38}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,253}$/;
const SCOPE = /^[\x21-\x7e]+$/;

function member(provider: string): JSONSchema {
  const github = provider === WITH_TEAMS;
  const onlyGithub = (field: string) => described(forbidden(`only the ${WITH_TEAMS} provider takes ${field}`), `Only the ${WITH_TEAMS} provider takes ${field}.`);
  return described(object({
    client_id: described({ type: 'string', minLength: 1, maxBytes: 512 }, 'The client ID of your own OAuth application at the provider; needs client_secret. Default: the service\'s managed application (its scopes are fixed).'),
    client_secret: described(secret, 'The client secret of your OAuth application: {env: NAME} or {file: path}, never written in the manifest. Stored, never returned.'),
    scopes: described(strings(100), 'Scopes to request from the provider (at most 100); only with your own client_id and client_secret. Default: the provider\'s basic sign-in scopes.'),
    email_addresses: described(strings(1000, 320), 'Only users with one of these email addresses may pass (case-insensitive; at most 1000). With email_domains, teams and organizations: any one list admits.'),
    email_domains: described(strings(1000, 253), 'Only users with an email address in one of these domains may pass (case-insensitive; at most 1000).', [['example.com']]),
    teams: github ? described(strings(1000), 'Only members of one of these teams may pass: org/team slugs (at most 1000).', [['my-org/platform']]) : onlyGithub('teams'),
    organizations: github ? described(strings(1000), 'Only members of one of these organizations may pass: organization slugs (at most 1000).') : onlyGithub('organizations'),
  }), `Sign in with ${provider}, and who may pass.`);
}

type Rule = (v: string) => string | null;
type List = [field: string, rule: Rule, fold: boolean];

/** The lists of a member: the rule on each item and whether values are case-insensitive (stored folded). */
const LISTS: List[] = [
  ['scopes', (v) => (SCOPE.test(v) ? null : 'must be one scope without spaces'), false],
  ['email_addresses', (v) => {
    if (!EMAIL.test(v)) return 'is not an email address (local@domain)';
    const problem = dnsNameProblem(v.slice(v.lastIndexOf('@') + 1));
    return problem ? `has an invalid domain: ${problem}` : null;
  }, true],
  ['email_domains', (v) => dnsNameProblem(v), true],
];
const TEAM_LISTS: List[] = [
  ['teams', (v) => (TEAM.test(v) ? null : 'must be a team slug qualified with its organization: org/team'), false],
  ['organizations', (v) => (ORG.test(v) ? null : 'must be an organization slug (letters, digits, hyphens; at most 39)'), false],
];
const lists = (provider: string): List[] => (provider === WITH_TEAMS ? [...LISTS, ...TEAM_LISTS] : LISTS);

/** Checks each item (after folding case where the value is case-insensitive) and refuses repeats. */
function checkList(m: Body, field: string, base: string[], rule: Rule, fold: boolean, ctx: CheckContext): void {
  const seen = new Set<string>();
  ((m[field] as string[] | undefined) ?? []).forEach((raw, i) => {
    const v = fold ? raw.toLowerCase() : raw;
    const problem = rule(v);
    if (problem) ctx.report([...base, field, i], `${JSON.stringify(raw.slice(0, 100))} ${problem}`);
    else if (seen.has(v)) ctx.report([...base, field, i], `${JSON.stringify(raw.slice(0, 100))} is listed twice`);
    else seen.add(v);
  });
}

function checkMember(m: Body, provider: string, ctx: CheckContext): void {
  const base = ['oauth', 'provider', provider];
  const hasId = 'client_id' in m;
  const hasSecret = 'client_secret' in m;
  // Without the stored module (`validate`) a secret the body leaves out may yet be carried over
  // from it (same client_id): rules that need the secret absent are the service's.
  const secretMayBeKept = !hasSecret && !ctx.stored;
  if (hasId && !hasSecret && !secretMayBeKept) {
    const before = (ctx.stored?.previous?.provider as Body | undefined)?.[provider] as Body | undefined;
    const hint = before?.client_secret !== undefined ? ' (the stored secret belonged to another client_id and is not kept when client_id changes)' : '';
    ctx.report([...base, 'client_secret'], `is required with client_id${hint}`);
  }
  if (hasSecret && !hasId) ctx.report([...base, 'client_id'], 'is required with client_secret');
  if (((m.scopes as string[] | undefined) ?? []).length && !(hasId && (hasSecret || secretMayBeKept))) {
    ctx.report([...base, 'scopes'], `may be set only with both client_id and client_secret (the managed application's scopes are fixed)`);
  }
  for (const [field, rule, fold] of lists(provider)) checkList(m, field, base, rule, fold, ctx);
}

export const oauth: ModuleDef = {
  name: 'oauth',
  request: described(object({
    ...sessionFields,
    auth_check_interval: described(uint32, 'Seconds after which the user\'s state is read again from the provider and access checked again: how long a revoked user may keep access. Default: the service\'s own.'),
    provider: described(object(Object.fromEntries(OAUTH_PROVIDERS.map((p) => [p, member(p)]))), `The identity provider: exactly one of ${OAUTH_PROVIDERS.join(', ')}.`),
  }, ['provider']), 'OAuth sign-in: users sign in with an identity provider before they reach the route (at most one of oauth, saml, oidc).'),
  defaults: sessionDefaults,
  writeOnly: OAUTH_PROVIDERS.map((p) => `provider.${p}.client_secret`),
  // A stored client secret belongs to its client_id.
  secretBoundTo: Object.fromEntries(OAUTH_PROVIDERS.map((p) => [`provider.${p}.client_secret`, [`provider.${p}.client_id`]])),
  exclusiveGroup: 'authentication',
  role: 'guard',
  risk: 'security',
  reconcile: {
    configDefaults: sessionConfigDefaults,
    fill: {
      'provider.*.scopes': [], 'provider.*.email_addresses': [], 'provider.*.email_domains': [],
      [`provider.${WITH_TEAMS}.teams`]: [], [`provider.${WITH_TEAMS}.organizations`]: [],
    },
    normalize: { 'provider.*.email_addresses': 'lowercase-items', 'provider.*.email_domains': 'lowercase-items' },
    sets: ['provider.*.scopes', 'provider.*.email_addresses', 'provider.*.email_domains', 'provider.*.teams', 'provider.*.organizations'],
  },
  check(m, ctx) {
    const providers = m.provider as Record<string, Body>;
    const given = Object.keys(providers);
    if (given.length !== 1) {
      return ctx.report(['oauth', 'provider'], `must configure exactly one of ${OAUTH_PROVIDERS.join(', ')}${given.length ? `; got ${given.join(', ')}` : ''}`);
    }
    checkMember(providers[given[0]], given[0], ctx);
  },
  prepare(m, ctx) {
    const [name, member] = Object.entries(m.provider as Record<string, Body>)[0];
    // Every list is stored, empty when left out; case-insensitive values in lower case.
    for (const [field, , fold] of lists(name)) {
      const list = (member[field] as string[] | undefined) ?? [];
      member[field] = fold ? list.map((v) => v.toLowerCase()) : list;
    }
    defaultCookiePrefix(m, ctx);
  },
  responseOrder: [...sessionResponseOrder, 'auth_check_interval', 'provider'],
};
