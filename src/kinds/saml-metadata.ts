/**
 * A careful minimal check that `idp_metadata` is SAML IdP metadata: well-formed XML (elements,
 * attributes, namespaces, comments, CDATA, processing instructions, the five predefined entities
 * and character references), whose root is one md:EntityDescriptor with an entityID and an
 * IDPSSODescriptor holding a SingleSignOnService. DTDs are refused outright: a DOCTYPE is how
 * entity-expansion and external-entity attacks arrive, and metadata never needs one. The service
 * stores the document; it does not need a DOM, so no XML library is added for this.
 */
export const MD_NS = 'urn:oasis:names:tc:SAML:2.0:metadata';
const XML_NS = 'http://www.w3.org/XML/1998/namespace';
const MAX_DEPTH = 64;

const NAME_START = 'A-Za-z_\\u00C0-\\uFFFF';
const NAME_CHAR = NAME_START + '0-9.\\-\\u00B7';
const QNAME = new RegExp(`([${NAME_START}][${NAME_CHAR}]*)(?::([${NAME_START}][${NAME_CHAR}]*))?`, 'y');
const REF = /&(?:(lt|gt|amp|quot|apos)|#([0-9]+)|#x([0-9a-fA-F]+));/y;
const BAD_CHAR = /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/;

export class XmlProblem extends Error {}

interface Open { qname: string; ns: Map<string, string> }
interface Seen { local: string; ns: string | undefined; attrs: Map<string, string>; depth: number }

/** Parses `xml` and returns the IdP's entityID, or throws an XmlProblem saying what is wrong and where. */
export function checkIdpMetadata(xml: string): { entityId: string } {
  let entityId = '';
  let inIdp = false; // whether the latest child of the root is an IDPSSODescriptor
  let sso = false;
  parse(xml, (el) => {
    if (el.depth === 0) {
      if (el.local === 'EntitiesDescriptor') throw new XmlProblem('must be one EntityDescriptor, not an EntitiesDescriptor aggregate');
      if (el.local !== 'EntityDescriptor' || el.ns !== MD_NS) {
        throw new XmlProblem(`the root element must be EntityDescriptor in the ${MD_NS} namespace`);
      }
      entityId = el.attrs.get('entityID') ?? '';
      if (!entityId.trim()) throw new XmlProblem('EntityDescriptor must have a non-empty entityID attribute');
    } else if (el.depth === 1) {
      inIdp = el.local === 'IDPSSODescriptor' && el.ns === MD_NS;
    } else if (el.depth === 2 && inIdp && el.local === 'SingleSignOnService' && el.ns === MD_NS && el.attrs.get('Location')) {
      sso = true;
    }
  });
  if (!sso) throw new XmlProblem('EntityDescriptor must hold an IDPSSODescriptor with a SingleSignOnService Location (this is the identity provider\'s metadata)');
  return { entityId };
}

function parse(xml: string, onElement: (el: Seen) => void): void {
  let pos = xml.charCodeAt(0) === 0xfeff ? 1 : 0;
  const fail = (msg: string): never => {
    const before = xml.slice(0, pos);
    const line = before.split('\n').length;
    throw new XmlProblem(`not well-formed XML at line ${line}, column ${pos - before.lastIndexOf('\n')}: ${msg}`);
  };
  const bad = BAD_CHAR.exec(xml);
  if (bad) {
    pos = bad.index;
    fail('control characters are not allowed in XML');
  }
  const at = (s: string) => xml.startsWith(s, pos);
  const skipWs = () => {
    while (pos < xml.length && ' \t\r\n'.includes(xml[pos])) pos++;
  };
  const until = (end: string, what: string): string => {
    const i = xml.indexOf(end, pos);
    if (i < 0) fail(`unterminated ${what}`);
    const body = xml.slice(pos, i);
    pos = i + end.length;
    return body;
  };
  const qname = (): [string, string | undefined] => {
    QNAME.lastIndex = pos;
    const m = QNAME.exec(xml);
    if (!m) fail('expected a name');
    pos = QNAME.lastIndex;
    return m![2] === undefined ? [m![1], undefined] : [m![2], m![1]];
  };
  const checkRefs = (text: string, offset: number) => {
    for (let i = text.indexOf('&'); i >= 0; i = text.indexOf('&', i + 1)) {
      REF.lastIndex = i;
      const m = REF.exec(text);
      if (!m) {
        pos = offset + i;
        fail('"&" must start an entity reference such as &amp; (only the five predefined entities and character references are allowed)');
      }
      const code = m![2] ? parseInt(m![2], 10) : m![3] ? parseInt(m![3], 16) : 0x20;
      // XML's Char: tab, LF, CR, U+0020–U+D7FF, U+E000–U+FFFD, U+10000–U+10FFFF (no surrogates, no U+FFFE/U+FFFF).
      if (!(code === 9 || code === 10 || code === 13 || (code >= 0x20 && code <= 0xd7ff) || (code >= 0xe000 && code <= 0xfffd) || (code >= 0x10000 && code <= 0x10ffff))) {
        pos = offset + i;
        fail('character reference to a character XML does not allow');
      }
    }
  };
  /** Comments, processing instructions and white space, allowed before and after the root. */
  const misc = (allowDecl: boolean) => {
    for (;;) {
      skipWs();
      if (at('<?xml') && /[\s?]/.test(xml[pos + 5] ?? '')) {
        if (!allowDecl) fail('the XML declaration must come first');
        pos += 5;
        until('?>', 'XML declaration');
      } else if (at('<?')) {
        pos += 2;
        until('?>', 'processing instruction');
      } else if (at('<!--')) {
        pos += 4;
        if (until('-->', 'comment').includes('--')) fail('"--" is not allowed inside a comment');
      } else if (at('<!DOCTYPE') || at('<!ENTITY')) {
        fail('DTDs (<!DOCTYPE …>) are not accepted in metadata');
      } else return;
      allowDecl = false;
    }
  };

  misc(true);
  if (!at('<')) fail(pos >= xml.length ? 'no root element' : 'expected the root element');
  const stack: Open[] = [];
  let rootDone = false;
  while (!rootDone) {
    if (at('</')) {
      pos += 2;
      const start = pos;
      qname();
      const name = xml.slice(start, pos);
      skipWs();
      if (!at('>')) fail(`expected ">" to close </${name}`);
      pos++;
      const open = stack.pop()!;
      if (open.qname !== name) fail(`</${name}> closes <${open.qname}>`);
      rootDone = stack.length === 0;
    } else if (at('<!--')) {
      pos += 4;
      if (until('-->', 'comment').includes('--')) fail('"--" is not allowed inside a comment');
    } else if (at('<![CDATA[')) {
      pos += 9;
      until(']]>', 'CDATA section');
    } else if (at('<?')) {
      pos += 2;
      until('?>', 'processing instruction');
    } else if (at('<!')) {
      fail('DTDs and declarations are not accepted in metadata');
    } else if (at('<')) {
      pos++;
      if (stack.length >= MAX_DEPTH) fail(`elements nest deeper than ${MAX_DEPTH} levels`);
      rootDone = startTag(stack);
    } else if (pos >= xml.length) {
      fail(`unexpected end of document inside <${stack.at(-1)?.qname}>`);
    } else {
      const start = pos;
      const end = xml.indexOf('<', pos);
      pos = end < 0 ? xml.length : end;
      const text = xml.slice(start, pos);
      if (text.includes(']]>')) {
        pos = start + text.indexOf(']]>');
        fail('"]]>" is not allowed in text');
      }
      checkRefs(text, start);
    }
  }
  misc(false);
  if (pos < xml.length) fail('content after the root element (a document has one root)');

  /** After "<": reads a start tag; returns true when it was the root and empty (`<a/>`). */
  function startTag(stack: Open[]): boolean {
    const tagStart = pos;
    const [local, prefix] = qname();
    const qn = xml.slice(tagStart, pos);
    const raw = new Map<string, string>();
    for (;;) {
      const wsStart = pos;
      skipWs();
      if (at('/>') || at('>')) break;
      if (pos === wsStart) fail(`expected white space, ">" or "/>" in <${qn}>`);
      const nameStart = pos;
      qname();
      const attr = xml.slice(nameStart, pos);
      skipWs();
      if (!at('=')) fail(`attribute ${attr} needs ="value"`);
      pos++;
      skipWs();
      const quote = xml[pos];
      if (quote !== '"' && quote !== "'") fail(`the value of ${attr} must be quoted`);
      pos++;
      const valueStart = pos;
      const value = until(quote, `value of ${attr}`);
      if (value.includes('<')) {
        pos = valueStart + value.indexOf('<');
        fail(`"<" is not allowed in the value of ${attr}`);
      }
      checkRefs(value, valueStart);
      if (raw.has(attr)) fail(`attribute ${attr} is given twice`);
      raw.set(attr, unescape(value));
    }
    const empty = at('/>');
    pos += empty ? 2 : 1;
    const ns = new Map(stack.at(-1)?.ns ?? [['xml', XML_NS]]);
    for (const [k, v] of raw) {
      if (k === 'xmlns') ns.set('', v);
      else if (k.startsWith('xmlns:')) ns.set(k.slice(6), v);
    }
    const elementNs = ns.get(prefix ?? '');
    if (prefix !== undefined && elementNs === undefined) fail(`namespace prefix "${prefix}" of <${qn}> is not declared`);
    const attrs = new Map<string, string>();
    for (const [k, v] of raw) {
      const colon = k.indexOf(':');
      if (colon > 0 && k.slice(0, colon) !== 'xmlns' && !ns.has(k.slice(0, colon))) fail(`namespace prefix of attribute ${k} is not declared`);
      if (colon < 0) attrs.set(k, v);
    }
    onElement({ local, ns: elementNs || undefined, attrs, depth: stack.length });
    if (empty) return stack.length === 0;
    stack.push({ qname: qn, ns });
    return false;
  }
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function unescape(value: string): string {
  return value.replace(/&(?:(lt|gt|amp|quot|apos)|#([0-9]+)|#x([0-9a-fA-F]+));/g, (_, name, dec, hex) =>
    name ? ENTITIES[name] : String.fromCodePoint(dec ? parseInt(dec, 10) : parseInt(hex, 16)),
  );
}
