import { ApiError } from '../service/errors.js';
import { enabled, object, secret } from './fields.js';
import type { ModuleDef } from './types.js';

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
  request: object({ enabled, provider: { type: 'string', minLength: 1, maxLength: 64 }, secret }, ['provider']),
  defaults: { enabled: true },
  writeOnly: ['secret'],
  // A stored secret is the old provider's: it is not kept when the provider changes.
  secretBoundTo: { secret: ['provider'] },
  // Requests without a valid signature are refused: it guards the backend like an auth module.
  role: 'guard',
  normalize: (m) => (typeof m.provider === 'string' ? { ...m, provider: m.provider.toLowerCase() } : m),
  prepare(m, ctx) {
    const provider = m.provider as string;
    if (!WEBHOOK_PROVIDERS.includes(provider)) {
      throw new ApiError('ERR_VALIDATION', `webhook_verification.provider: ${JSON.stringify(provider)} is not a supported provider; one of ${WEBHOOK_PROVIDERS.join(', ')}`);
    }
    if (SECRETLESS_PROVIDERS.includes(provider)) {
      if ('secret' in m && !ctx.carried.includes('secret')) {
        throw new ApiError('ERR_VALIDATION', `webhook_verification.secret: provider ${provider} takes no secret (its messages are signed with the provider's certificates); leave secret out`);
      }
      delete m.secret;
    } else if (!('secret' in m)) {
      const changed = ctx.previousModule?.provider !== undefined && ctx.previousModule.provider !== provider;
      throw new ApiError('ERR_VALIDATION', `webhook_verification.secret: is required for provider ${provider}${changed ? ` (the stored secret belonged to ${String(ctx.previousModule!.provider)} and is not kept when the provider changes)` : ''}`);
    }
  },
  responseOrder: ['enabled', 'provider'],
};
