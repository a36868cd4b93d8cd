import { described, object, strings } from './fields.js';
import { checkIdpMetadata, XmlProblem } from '../util/saml-metadata.js';
import { generateSigningPair } from './saml-signing.js';
import { defaultCookiePrefix, sessionConfigDefaults, sessionDefaults, sessionFields, sessionResponseOrder } from './session.js';
import type { ModuleDef } from './types.js';

export const NAMEID_FORMATS = [
  'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
];

/** Where the service publishes a route's SAML service-provider endpoints. */
export function samlUrls(publicBaseUrl: string, routeId: string) {
  const base = `${publicBaseUrl}/saml/${routeId}`;
  return { metadata_url: `${base}/metadata`, assertion_consumer_service_url: `${base}/acs`, single_logout_url: `${base}/slo` };
}

export const saml: ModuleDef = {
  name: 'saml',
  request: described(object({
    ...sessionFields,
    idp_metadata: described({ type: 'string', minLength: 1, maxBytes: 262144 }, 'The identity provider\'s SAML metadata: its whole EntityDescriptor XML document (at most 256 KiB).'),
    force_authn: described({ type: 'boolean' }, 'Have the identity provider ask for credentials on every sign-in, even when the user has a session there. Default: false.'),
    allow_idp_initiated: described({ type: 'boolean' }, 'Accept sign-ins the identity provider starts (it sets RelayState to the target URL). Default: false.'),
    authorized_groups: described(strings(1000), 'Only members of one of these groups may pass (at most 1000). Default: every user the identity provider signs in.'),
    nameid_format: described({ type: 'string', enum: NAMEID_FORMATS }, `The name identifier format expected from the identity provider. Default: ${NAMEID_FORMATS[0]}.`),
  }, ['idp_metadata']), 'SAML sign-in: users sign in with a SAML identity provider before they reach the route (at most one of oauth, saml, oidc).'),
  defaults: { ...sessionDefaults, force_authn: false, allow_idp_initiated: false, authorized_groups: [], nameid_format: NAMEID_FORMATS[0] },
  derived: ['entity_id', 'assertion_consumer_service_url', 'single_logout_url', 'request_signing_certificate_pem', 'metadata_url'],
  derivedSchemas: {
    entity_id: { type: 'string', format: 'uri' },
    assertion_consumer_service_url: { type: 'string', format: 'uri' },
    single_logout_url: { type: 'string', format: 'uri' },
    request_signing_certificate_pem: { type: 'string' },
    metadata_url: { type: 'string', format: 'uri' },
  },
  // The private key of the request-signing certificate: generated once per route, kept across
  // updates (the generic carry-over), never returned.
  writeOnly: ['request_signing_key_pem'],
  exclusiveGroup: 'authentication',
  role: 'guard',
  risk: 'security',
  reconcile: { configDefaults: sessionConfigDefaults, sets: ['authorized_groups'] },
  check(m, ctx) {
    try {
      checkIdpMetadata(m.idp_metadata as string);
    } catch (err) {
      if (!(err instanceof XmlProblem)) throw err;
      ctx.report(['saml', 'idp_metadata'], err.message);
    }
  },
  async prepare(m, ctx) {
    defaultCookiePrefix(m, ctx);
    const urls = samlUrls(ctx.publicBaseUrl, ctx.id);
    m.entity_id = urls.metadata_url;
    Object.assign(m, urls);
    const kept = ctx.previousModule?.request_signing_certificate_pem;
    if (ctx.carried.includes('request_signing_key_pem') && typeof kept === 'string') {
      m.request_signing_certificate_pem = kept;
    } else {
      const pair = await generateSigningPair(`SAML SP ${ctx.id}`);
      m.request_signing_certificate_pem = pair.certificatePem;
      m.request_signing_key_pem = pair.privateKeyPem;
    }
  },
  responseOrder: [
    ...sessionResponseOrder, 'idp_metadata', 'force_authn', 'allow_idp_initiated', 'authorized_groups', 'entity_id',
    'assertion_consumer_service_url', 'single_logout_url', 'request_signing_certificate_pem', 'metadata_url', 'nameid_format',
  ],
};
