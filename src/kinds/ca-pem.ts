import { createHash, X509Certificate } from 'node:crypto';
import { childrenOf, oidOf, readTlv, type Tlv } from '../util/der.js';
import { rfc3339 } from '../util/time.js';

const KEY_USAGE_BITS = [
  'digital_signature', 'content_commitment', 'key_encipherment', 'data_encipherment',
  'key_agreement', 'cert_sign', 'crl_sign', 'encipher_only', 'decipher_only',
];

const EXTENDED_KEY_USAGES: Record<string, string> = {
  '2.5.29.37.0': 'any',
  '1.3.6.1.5.5.7.3.1': 'server_auth',
  '1.3.6.1.5.5.7.3.2': 'client_auth',
  '1.3.6.1.5.5.7.3.3': 'code_signing',
  '1.3.6.1.5.5.7.3.4': 'email_protection',
  '1.3.6.1.5.5.7.3.8': 'time_stamping',
  '1.3.6.1.5.5.7.3.9': 'ocsp_signing',
};

export interface ParsedCa {
  ca_pem: string;
  subject_common_name: string;
  not_before: string;
  not_after: string;
  key_usages: string[];
  extended_key_usages: string[];
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/**
 * The certificate of an uploaded CA PEM, or what is wrong with it: the PEM must be exactly one
 * CERTIFICATE block, an X.509 certificate whose basicConstraints mark it a CA.
 */
function readCaPem(pem: string): X509Certificate | string {
  const blocks = [...pem.matchAll(BLOCK)];
  if (blocks.length === 0) return 'no PEM block found; expected one "-----BEGIN CERTIFICATE-----" block';
  const others = blocks.filter((b) => b[1] !== 'CERTIFICATE').map((b) => b[1]);
  if (others.length) return `expected only a CERTIFICATE block, found ${others.join(', ')}`;
  if (blocks.length > 1) return `holds ${blocks.length} certificates; upload exactly one CA certificate`;
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(blocks[0][0]);
  } catch {
    return 'the CERTIFICATE block is not a valid X.509 certificate';
  }
  return cert.ca ? cert : 'the certificate is not a CA (basicConstraints CA:TRUE is missing)';
}

/**
 * What parsing a PEM found, by the PEM's SHA-256: every plan of a manifest tree checks the same
 * certificates, and a watch session or a service checks them again and again. Keyed by hash so a
 * thousand kept entries hold 64 characters each, not the PEMs. Bounded: the oldest entry goes first.
 */
interface Known { problem: string | null; parsed?: ParsedCa }
const known = new Map<string, Known>();
const KNOWN_MAX = 10_000;

function knownOf(pem: string): { key: string; entry: Known | undefined } {
  const key = createHash('sha256').update(pem).digest('base64');
  return { key, entry: known.get(key) };
}

function remember(key: string, entry: Known): Known {
  if (known.size >= KNOWN_MAX) known.delete(known.keys().next().value!);
  known.set(key, entry);
  return entry;
}

/** What is wrong with an uploaded CA PEM (the certificate authority's check), or null. */
export function caPemProblem(pem: string): string | null {
  const { key, entry } = knownOf(pem);
  if (entry) return entry.problem;
  const r = readCaPem(pem);
  // The derived fields are read only when a CA is created (parseCaPem): a check needs none of them.
  return remember(key, { problem: typeof r === 'string' ? r : null }).problem;
}

/** The fields the service derives from a checked CA PEM (RSA or EC). */
export function parseCaPem(pem: string): ParsedCa {
  const { key, entry } = knownOf(pem);
  let parsed = entry?.parsed;
  if (!parsed) {
    const cert = readCaPem(pem);
    if (typeof cert === 'string') throw new Error(`ca_pem was not checked: ${cert}`);
    parsed = fieldsOf(cert);
    if (entry) entry.parsed = parsed;
    else remember(key, { problem: null, parsed });
  }
  // A copy: the caller stores it in a body of its own.
  return { ...parsed, key_usages: [...parsed.key_usages], extended_key_usages: [...parsed.extended_key_usages] };
}

function fieldsOf(cert: X509Certificate): ParsedCa {
  return {
    ca_pem: cert.toString().trimEnd() + '\n',
    subject_common_name: commonName(cert.raw),
    not_before: rfc3339(new Date(cert.validFrom)),
    not_after: rfc3339(new Date(cert.validTo)),
    key_usages: keyUsages(cert.raw),
    extended_key_usages: (cert.keyUsage ?? []).map((oid) => EXTENDED_KEY_USAGES[oid] ?? oid),
  };
}

/** The TBSCertificate's universal-class fields: serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo. */
function tbsOf(der: Buffer): { fields: Tlv[]; all: Tlv[] } {
  const all = childrenOf(childrenOf(readTlv(der).contents)[0].contents);
  return { fields: all.filter((n) => (n.tag & 0xc0) === 0), all };
}

/**
 * The subject's (first) common name as the certificate holds it, read from the DER: node:crypto's
 * `subject` is RFC 4514 text, which escapes `,` `+` `"` `\\` `<` `>` `;` and control characters
 * (`Acme\\, Inc.`), and the CA's name is that value, not its escaped form.
 */
function commonName(der: Buffer): string {
  const subject = tbsOf(der).fields[4];
  for (const rdn of subject ? childrenOf(subject.contents) : []) {
    for (const atv of childrenOf(rdn.contents)) {
      const [oid, value] = childrenOf(atv.contents);
      if (oid && value && oidOf(oid.contents) === '2.5.4.3') return directoryString(value);
    }
  }
  return '';
}

/** A DirectoryString's text by its ASN.1 type: UTF8String, BMPString (UTF-16BE), UniversalString (UTF-32BE), or an 8-bit one. */
function directoryString(v: Tlv): string {
  const bytes = v.contents;
  switch (v.tag & 0x1f) {
    case 12: return bytes.toString('utf8');
    case 30: return Buffer.from(bytes).swap16().toString('utf16le');
    case 28: {
      let out = '';
      for (let i = 0; i + 3 < bytes.length; i += 4) out += String.fromCodePoint(bytes.readUInt32BE(i));
      return out;
    }
    default: return bytes.toString('latin1');
  }
}

/** The keyUsage bits, read from the DER (node:crypto does not expose them). */
function keyUsages(der: Buffer): string[] {
  const extsWrapper = tbsOf(der).all.find((n) => n.tag === 0xa3); // [3] EXPLICIT extensions
  if (!extsWrapper) return [];
  for (const ext of childrenOf(childrenOf(extsWrapper.contents)[0].contents)) {
    const parts = childrenOf(ext.contents); // extnID, critical (optional), extnValue
    if (oidOf(parts[0].contents) !== '2.5.29.15') continue;
    const bytes = readTlv(parts[parts.length - 1].contents).contents; // the BIT STRING's contents
    // bytes[0] is the count of unused bits; the flags follow, most significant bit first.
    return KEY_USAGE_BITS.filter((_, i) => {
      const byte = bytes[1 + (i >> 3)];
      return byte !== undefined && (byte & (0x80 >> (i & 7))) !== 0;
    });
  }
  return [];
}
