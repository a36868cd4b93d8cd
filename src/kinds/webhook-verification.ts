import { described, enabled, object, secret } from './fields.js';
import type { ModuleDef } from './types.js';
import { suggest } from '../util/suggest.js';

/**
 * Webhook providers whose signatures the verification module checks, by the names clients send
 * (case-insensitive, stored in lower case). Every provider signs with a shared secret except
 * `sns`, which signs with the cloud's own certificates. docs/edges.md lists them.
 */
export const WEBHOOK_PROVIDERS = [
  'bitbucket', 'box', 'buildkite', 'calendly', 'circleci', 'clerk', 'coinbase', 'contentful',
  'docusign', 'dropbox', 'facebook_graph_api', 'facebook_messenger', 'github', 'gitlab', 'hubspot',
  'instagram', 'intercom', 'launch_darkly', 'linear', 'mailchimp', 'mailgun', 'microsoft_teams',
  'mux', 'pagerduty', 'plivo', 'pusher', 'segment', 'sendgrid', 'shopify', 'slack', 'sns',
  'square', 'stripe', 'svix', 'twilio', 'twitch', 'twitter', 'typeform', 'webex', 'whatsapp',
  'xero', 'zendesk', 'zoom',
];

/** Providers that take no secret. */
export const SECRETLESS_PROVIDERS = ['sns'];

export const webhookVerification: ModuleDef = {
  name: 'webhook_verification',
  request: described(object({
    enabled,
    provider: described({ type: 'string', minLength: 1, maxLength: 64 }, 'Who sends the webhooks, by name (case-insensitive): one of the providers of docs/edges.md.', WEBHOOK_PROVIDERS),
    secret: described(secret, 'The provider\'s signing secret: {env: NAME} or {file: path}, never written in the manifest; every provider but sns needs one. Stored, never returned; kept while the provider stays the same.'),
  }, ['provider']), 'Webhook verification: only requests signed by the provider reach the route.'),
  defaults: { enabled: true },
  writeOnly: ['secret'],
  // A stored secret is the old provider's: it is not kept when the provider changes.
  secretBoundTo: { secret: ['provider'] },
  // Requests without a valid signature are refused: it guards the backend like an auth module.
  role: 'guard',
  risk: 'security',
  normalize: (m) => (typeof m.provider === 'string' ? { ...m, provider: m.provider.toLowerCase() } : m),
  check(m, ctx) {
    const provider = m.provider as string;
    if (!WEBHOOK_PROVIDERS.includes(provider)) {
      const meant = suggest(provider, WEBHOOK_PROVIDERS);
      return ctx.report(['webhook_verification', 'provider'], `${JSON.stringify(provider)} is not a supported provider; ${meant ? `did you mean "${meant}"? ` : ''}one of ${WEBHOOK_PROVIDERS.join(', ')}`);
    }
    if (SECRETLESS_PROVIDERS.includes(provider)) {
      // A secret given by reference counts: it would be sent.
      if ('secret' in m && !ctx.stored?.carried.includes('secret')) {
        ctx.report(['webhook_verification', 'secret'], `provider ${provider} takes no secret (its messages are signed with the provider's certificates); leave secret out`);
      }
    } else if (!('secret' in m) && ctx.stored) {
      // Only the service knows whether a left-out secret is carried over (same provider).
      const before = ctx.stored.previous?.provider;
      const changed = before !== undefined && before !== provider;
      ctx.report(['webhook_verification', 'secret'], `is required for provider ${provider}${changed ? ` (the stored secret belonged to ${String(before)} and is not kept when the provider changes)` : ''}`);
    }
  },
  prepare(m) {
    if (SECRETLESS_PROVIDERS.includes(m.provider as string)) delete m.secret;
  },
  responseOrder: ['enabled', 'provider'],
};
