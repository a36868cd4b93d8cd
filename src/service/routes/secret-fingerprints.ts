import { createHmac } from 'node:crypto';
import type { FastifyInstance, FastifyRequest, HTTPMethods } from 'fastify';
import { ApiError } from '../../contract/errors.js';
import { isStorableText } from '../../util/text.js';
import { registerMethodNotAllowed, type OperationDoc } from './kind-routes.js';
import type { Caller } from '../writes/resources.js';
import { ownStack } from './stack-locks.js';

/**
 * Secret fingerprints (docs/edges.md, "Secret fingerprints"): the reconciler compares a manifest's
 * secret with the stored one by a fingerprint it keeps in the object's ownership marker. The
 * fingerprint is an HMAC under a key only the service holds (`Secrets.fingerprintKey`, sealed in
 * the database), bound to the account, stack, identity and field: what a reader of the account's
 * objects sees (markers, plans) cannot be checked against a guess without asking the service, one
 * request at a time, under its rate limit.
 */
export const SECRET_FINGERPRINTS_PATH = '/secret_fingerprints';
/** Values one request may fingerprint: a plan with more asks again. */
export const MAX_FINGERPRINTS = 500;

const BODY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['stack', 'secrets'],
  properties: {
    stack: { type: 'string', minLength: 1, maxLength: 255 },
    secrets: {
      type: 'array',
      maxItems: MAX_FINGERPRINTS,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['identity', 'path', 'value'],
        properties: {
          identity: { type: 'string', minLength: 1, maxLength: 1000 },
          path: { type: 'string', minLength: 1, maxLength: 500 },
          value: { type: 'string', minLength: 1, maxLength: 4096 },
        },
      },
    },
  },
};

const RESPONSE_SCHEMA = {
  type: 'object',
  properties: { fingerprints: { type: 'array', items: { type: 'string' }, description: 'One per secret, in order: 22 characters of base64url.' } },
  required: ['fingerprints'],
  additionalProperties: false,
};

/** The fingerprint of one secret of one object's field, for one account and stack. */
export function keyedFingerprint(key: Buffer, accountId: string, stack: string, identity: string, path: string, value: string): string {
  return createHmac('sha256', key).update(`edgeplane fingerprint v2\0${accountId}\0${stack}\0${identity}\0${path}\0${value}`).digest('base64url').slice(0, 22);
}

export function registerSecretFingerprints(app: FastifyInstance, callerOf: (req: FastifyRequest) => Caller): void {
  const openapi: OperationDoc = { operationId: 'fingerprintSecrets', params: [] };
  app.post(SECRET_FINGERPRINTS_PATH, {
    schema: { body: BODY_SCHEMA, response: { 200: RESPONSE_SCHEMA }, summary: 'Fingerprint secrets under the service\'s key (what plans compare; nothing is stored)', tags: ['secret fingerprint'] },
    // Writes nothing: plans (read keys) ask it.
    config: { openapi, scope: 'read', stacks: 'checked' },
  }, async (req) => {
    const caller = callerOf(req);
    const input = req.body as { stack: string; secrets: { identity: string; path: string; value: string }[] };
    // A stack-limited key asks only about its stacks' secrets.
    ownStack(caller, input.stack, 'the secrets to fingerprint');
    const key = (await app.secrets.start()).fingerprintKey;
    const fingerprints = input.secrets.map((s, i) => {
      if (!isStorableText(s.value) || !isStorableText(s.identity) || !isStorableText(s.path)) throw new ApiError('ERR_VALIDATION', `secrets[${i}]: text may not contain U+0000 or an unpaired UTF-16 surrogate`);
      return keyedFingerprint(key, caller.accountId, input.stack, s.identity, s.path, s.value);
    });
    return { fingerprints };
  });
  registerMethodNotAllowed(app, new Map([[SECRET_FINGERPRINTS_PATH, new Set<HTTPMethods>(['POST'])]]));
}
