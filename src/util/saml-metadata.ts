import { createRequire } from 'node:module';
import type { SaxesParser as Parser, SaxesTagNS } from 'saxes';

let Saxes: typeof Parser | undefined;
/** saxes, loaded the first time metadata is read: a SAML module's create or check, which most runs make none of. */
const SaxesParser = (): typeof Parser => (Saxes ??= (createRequire(import.meta.url)('saxes') as { SaxesParser: typeof Parser }).SaxesParser);

/**
 * The check that `idp_metadata` is SAML IdP metadata: well-formed, namespace-aware XML (saxes, a
 * strict SAX parser) whose root is one md:EntityDescriptor with an entityID and an
 * IDPSSODescriptor holding a SingleSignOnService. DTDs are refused outright: a DOCTYPE is how
 * entity-expansion and external-entity attacks arrive, and metadata never needs one; saxes expands
 * only the predefined entities and character references. The service stores the document; it
 * needs no DOM.
 */
export const MD_NS = 'urn:oasis:names:tc:SAML:2.0:metadata';
const MAX_DEPTH = 64;

export class XmlProblem extends Error {}

/** Parses `xml` and returns the IdP's entityID, or throws an XmlProblem saying what is wrong and where. */
export function checkIdpMetadata(xml: string): { entityId: string } {
  let entityId = '';
  let depth = 0;
  let inIdp = false; // whether the open child of the root is an IDPSSODescriptor
  let sso = false;
  const parser = new (SaxesParser())({ xmlns: true, position: true });
  const problem = (msg: string) => new XmlProblem(`not well-formed XML at line ${parser.line}, column ${parser.column}: ${msg}`);
  parser.on('doctype', () => {
    throw problem('DTDs (<!DOCTYPE …>) are not accepted in metadata');
  });
  parser.on('opentag', (tag: SaxesTagNS) => {
    if (depth >= MAX_DEPTH) throw problem(`elements nest deeper than ${MAX_DEPTH} levels`);
    if (depth === 0) {
      if (tag.local === 'EntitiesDescriptor') throw new XmlProblem('must be one EntityDescriptor, not an EntitiesDescriptor aggregate');
      if (tag.local !== 'EntityDescriptor' || tag.uri !== MD_NS) throw new XmlProblem(`the root element must be EntityDescriptor in the ${MD_NS} namespace`);
      entityId = tag.attributes.entityID?.value ?? '';
      if (!entityId.trim()) throw new XmlProblem('EntityDescriptor must have a non-empty entityID attribute');
    } else if (depth === 1) {
      inIdp = tag.local === 'IDPSSODescriptor' && tag.uri === MD_NS;
    } else if (depth === 2 && inIdp && tag.local === 'SingleSignOnService' && tag.uri === MD_NS && tag.attributes.Location?.value) {
      sso = true;
    }
    if (!tag.isSelfClosing) depth++;
  });
  parser.on('closetag', (tag: SaxesTagNS) => {
    if (!tag.isSelfClosing) depth--;
  });
  try {
    parser.write(xml).close();
  } catch (err) {
    if (err instanceof XmlProblem) throw err;
    // saxes words its errors `line:column: what.`
    const m = /^(\d+):(\d+): (.*?)\.?$/s.exec(err instanceof Error ? err.message : String(err));
    throw new XmlProblem(m ? `not well-formed XML at line ${m[1]}, column ${m[2]}: ${m[3]}` : `not well-formed XML: ${String(err)}`);
  }
  if (!sso) throw new XmlProblem('EntityDescriptor must hold an IDPSSODescriptor with a SingleSignOnService Location (this is the identity provider\'s metadata)');
  return { entityId };
}
