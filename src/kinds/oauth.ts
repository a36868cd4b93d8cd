import { ApiError } from '../service/errors.js';
import { dnsNameProblem } from './dns.js';
import { forbidden, object, secret, strings, uint32 } from './fields.js';
import { defaultCookiePrefix, sessionConfigDefaults, sessionDefaults, sessionFields, sessionResponseOrder } from './session.js';
import type { Body, JSONSchema, ModuleDef } from './types.js';

/** The eight identity providers; only github has teams and organizations. */
export const OAUTH_PROVIDERS = ['github', 'facebook', 'microsoft', 'google', 'linkedin', 'gitlab', 'twitch', 'amazon'];
const WITH_TEAMS = 'github';

const TEAM = /^[A-Za-z0-9][A-Za-z0-9-]{0,38}\/[A-Za-z0-9_.-]{1,100}$/;
const ORG = /^[A-Za-z0-9][A-Za-z0-9-]{0,38}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,253}$/;
const SCOPE = /^[\x21-\x7e]+$/;

function member(provider: string): JSONSchema {
  const github = provider === WITH_TEAMS;
  return object({
    client_id: { type: 'string', minLength: 1, maxBytes: 512 },
    client_secret: secret,
    scopes: strings(100),
    email_addresses: strings(1000, 320),
    email_domains: strings(1000, 253),
    teams: github ? strings(1000) : forbidden(`only the ${WITH_TEAMS} provider takes teams`),
    organizations: github ? strings(1000) : forbidden(`only the ${WITH_TEAMS} provider takes organizations`),
  });
}

function invalid(field: string, rule: string): ApiError {
  return new ApiError('ERR_VALIDATION', `${field}: ${rule}`);
}

/** Checks each item, folds case where the value is case-insensitive, refuses repeats. */
function checkList(m: Body, field: string, base: string, rule: (v: string) => string | null, fold: boolean): void {
  const seen: string[] = [];
  (m[field] as string[]).forEach((raw, i) => {
    const v = fold ? raw.toLowerCase() : raw;
    const problem = rule(v);
    if (problem) throw invalid(`${base}.${field}[${i}]`, `${JSON.stringify(raw.slice(0, 100))} ${problem}`);
    if (seen.includes(v)) throw invalid(`${base}.${field}[${i}]`, `${JSON.stringify(raw.slice(0, 100))} is listed twice`);
    seen.push(v);
  });
  m[field] = seen;
}

function checkMember(m: Body, provider: string, previous?: Body): void {
  const base = `oauth.provider.${provider}`;
  const hasId = 'client_id' in m;
  const hasSecret = 'client_secret' in m;
  if (hasId && !hasSecret) {
    const before = (previous?.provider as Body | undefined)?.[provider] as Body | undefined;
    const hint = before?.client_secret !== undefined ? ' (the stored secret belonged to another client_id and is not kept when client_id changes)' : '';
    throw invalid(`${base}.client_secret`, `is required with client_id${hint}`);
  }
  if (hasSecret && !hasId) throw invalid(`${base}.client_id`, 'is required with client_secret');
  for (const f of ['scopes', 'email_addresses', 'email_domains', ...(provider === WITH_TEAMS ? ['teams', 'organizations'] : [])]) m[f] ??= [];
  if ((m.scopes as string[]).length && !(hasId && hasSecret)) {
    throw invalid(`${base}.scopes`, `may be set only with both client_id and client_secret (the managed application's scopes are fixed)`);
  }
  checkList(m, 'scopes', base, (v) => (SCOPE.test(v) ? null : 'must be one scope without spaces'), false);
  checkList(m, 'email_addresses', base, (v) => {
    if (!EMAIL.test(v)) return 'is not an email address (local@domain)';
    const problem = dnsNameProblem(v.slice(v.lastIndexOf('@') + 1));
    return problem ? `has an invalid domain: ${problem}` : null;
  }, true);
  checkList(m, 'email_domains', base, (v) => dnsNameProblem(v), true);
  if (provider === WITH_TEAMS) {
    checkList(m, 'teams', base, (v) => (TEAM.test(v) ? null : 'must be a team slug qualified with its organization: org/team'), false);
    checkList(m, 'organizations', base, (v) => (ORG.test(v) ? null : 'must be an organization slug (letters, digits, hyphens; at most 39)'), false);
  }
}

export const oauth: ModuleDef = {
  name: 'oauth',
  request: object({
    ...sessionFields,
    auth_check_interval: uint32,
    provider: object(Object.fromEntries(OAUTH_PROVIDERS.map((p) => [p, member(p)]))),
  }, ['provider']),
  defaults: sessionDefaults,
  writeOnly: OAUTH_PROVIDERS.map((p) => `provider.${p}.client_secret`),
  // A stored client secret belongs to its client_id.
  secretBoundTo: Object.fromEntries(OAUTH_PROVIDERS.map((p) => [`provider.${p}.client_secret`, [`provider.${p}.client_id`]])),
  exclusiveGroup: 'authentication',
  role: 'guard',
  reconcile: {
    configDefaults: sessionConfigDefaults,
    fill: {
      'provider.*.scopes': [], 'provider.*.email_addresses': [], 'provider.*.email_domains': [],
      [`provider.${WITH_TEAMS}.teams`]: [], [`provider.${WITH_TEAMS}.organizations`]: [],
    },
    normalize: { 'provider.*.email_addresses': 'lowercase-items', 'provider.*.email_domains': 'lowercase-items' },
    sets: ['provider.*.scopes', 'provider.*.email_addresses', 'provider.*.email_domains', 'provider.*.teams', 'provider.*.organizations'],
  },
  prepare(m, ctx) {
    const providers = m.provider as Record<string, Body>;
    const given = Object.keys(providers);
    if (given.length !== 1) {
      throw invalid('oauth.provider', `must configure exactly one of ${OAUTH_PROVIDERS.join(', ')}${given.length ? `; got ${given.join(', ')}` : ''}`);
    }
    const name = given[0];
    checkMember(providers[name], name, ctx.previousModule);
    defaultCookiePrefix(m, ctx);
  },
  responseOrder: [...sessionResponseOrder, 'auth_check_interval', 'provider'],
};
