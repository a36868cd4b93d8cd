import { describe, expect, it } from 'vitest';
import { checkIdpMetadata } from '../../src/util/saml-metadata.js';
import { IDP_METADATA, IDP_METADATA_DEFAULT_NS } from '../helpers/edges.js';

const MD = 'xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"';
const SSO = '<md:IDPSSODescriptor><md:SingleSignOnService Binding="b" Location="https://idp/sso"/></md:IDPSSODescriptor>';
const doc = (inner = SSO, attrs = `${MD} entityID="urn:idp"`) => `<md:EntityDescriptor ${attrs}>${inner}</md:EntityDescriptor>`;

describe('IdP metadata check', () => {
  it('accepts real-shaped metadata, prefixed or default namespace, with comments, CDATA and references', () => {
    expect(checkIdpMetadata(IDP_METADATA).entityId).toBe('https://idp.example.com/metadata');
    expect(checkIdpMetadata(IDP_METADATA_DEFAULT_NS).entityId).toBe('urn:example:idp');
    expect(checkIdpMetadata('\uFEFF<?xml version="1.0"?>\n<!-- c -->' + doc(`<![CDATA[<x>]]>&amp;&#169;&#x1F600;${SSO}<?pi x?>`, `${MD} entityID="a&amp;b"`) + '\n').entityId).toBe('a&b');
  });

  it.each([
    ['', 'must contain a root element'],
    ['<md:EntityDescriptor', 'must contain a root element'],
    [doc().slice(0, -22), 'unclosed tag: md:EntityDescriptor'],
    [doc(SSO + '</md:Other>'), 'unexpected close tag'],
    [doc() + '<x/>', 'only one root'],
    ['<!DOCTYPE md [<!ENTITY x "y">]>' + doc(), 'DTD'],
    [doc(SSO + '<!ENTITY x "y">'), 'incorrect syntax'],
    [doc(SSO + '&bogus;'), 'undefined entity'],
    [doc(SSO + '&#0;'), 'malformed character entity'],
    [doc(SSO, `${MD} entityID="&#xD800;"`), 'malformed character entity'],
    [doc(SSO + '&#57343;'), 'malformed character entity'],
    [doc(SSO + '&#xFFFE;'), 'malformed character entity'],
    [doc(SSO + '&#x110000;'), 'malformed character entity'],
    [doc(SSO + '&#99999999999999999999;'), 'malformed character entity'],
    [doc(SSO, `${MD} entityID="a" entityID="b"`), 'duplicate attribute: entityID'],
    [doc(SSO, `${MD} entityID=a`), 'unquoted attribute value'],
    [doc(SSO, `${MD} entityID="<"`), 'disallowed character'],
    [doc(SSO + '<!-- a -- b -->'), 'malformed comment'],
    [doc(SSO, 'entityID="a"'), 'unbound namespace prefix: "md"'],
    [doc(SSO, `${MD} x:y="1" entityID="a"`), 'unbound namespace prefix: "x"'],
    [doc(SSO + '\u0001'), 'disallowed character'],
    [doc('<md:IDPSSODescriptor/>'), 'SingleSignOnService'],
    [doc('<md:SPSSODescriptor><md:SingleSignOnService Location="x"/></md:SPSSODescriptor>'), 'IDPSSODescriptor'],
    [doc(SSO, MD), 'entityID'],
    [`<md:EntitiesDescriptor ${MD}>${doc()}</md:EntitiesDescriptor>`, 'EntitiesDescriptor'],
    ['<EntityDescriptor entityID="a">' + SSO.replace(/md:/g, '') + '</EntityDescriptor>', 'namespace'],
    [doc('<a>'.repeat(70) + '</a>'.repeat(70) + SSO), 'deeper'],
    ['<?xml version="1.0"?><?xml version="1.0"?>' + doc(), 'XML declaration must be at the start'],
  ])('refuses %j (%s)', (xml, problem) => {
    expect(() => checkIdpMetadata(xml)).toThrow(problem);
  });

  it('accepts character references to every range XML allows', () => {
    expect(() => checkIdpMetadata(doc(SSO + '&#9;&#x20;&#xD7FF;&#xE000;&#xFFFD;&#x10000;&#x1F600;&#1114111;'))).not.toThrow();
  });

  it('reports line and column', () => {
    expect(() => checkIdpMetadata(`<md:EntityDescriptor ${MD} entityID="a">\n  <md:X a=1/></md:EntityDescriptor>`)).toThrow(/line 2, column 11: unquoted attribute value/);
  });
});
