import { createRequire } from 'node:module';
import type * as Tldts from 'tldts';
import { dnsNameProblem } from './dns.js';
import type { CheckContext } from './types.js';

/** The port an HTTPS edge listens on: the only one its hostports may name. */
export const HTTPS_PORT = 443;

/**
 * Checks the hostports of an HTTPS edge: `host:443`, a DNS name (a leading `*.` wildcard
 * allowed), no repeats ignoring case (DNS names are case-insensitive and uniqueness across the
 * service compares the lower-case form).
 */
export function checkHostports(list: string[], ctx: CheckContext): void {
  const seen = new Map<string, number>();
  list.forEach((raw, i) => {
    // Checked before lower-casing: some characters lower-case to ASCII (the Kelvin sign U+212A to
    // "k"), and would be stored as a name nobody wrote.
    const problem = /[^\x00-\x7f]/.test(raw) ? 'must be ASCII: write an internationalized name in punycode (xn--…)' : hostportProblem(raw.toLowerCase(), seen);
    if (problem) ctx.report(['hostports', i], `${JSON.stringify(raw.length > 300 ? raw.slice(0, 300) + '…' : raw)} ${problem}`);
    else seen.set(raw.toLowerCase(), i);
  });
}

function hostportProblem(value: string, seen: Map<string, number>): string | null {
  const colon = value.lastIndexOf(':');
  if (colon < 0) return `must be host:port, like example.com:${HTTPS_PORT}`;
  if (value.slice(colon + 1) !== String(HTTPS_PORT)) return `port must be ${HTTPS_PORT} on an HTTPS edge`;
  const problem = dnsNameProblem(value.slice(0, colon), { wildcard: true });
  if (problem) return `host ${problem}`;
  const suffix = wildcardOverPublicSuffix(value.slice(0, colon));
  if (suffix) return `covers every name under ${suffix}, a public suffix (Public Suffix List): a wildcard must sit under a registrable domain, like *.example.${suffix}:${HTTPS_PORT}`;
  const first = seen.get(value);
  return first === undefined ? null : `repeats hostports[${first}] (hostports are case-insensitive)`;
}

/**
 * The public suffix a wildcard covers (`*.co.uk` → `co.uk`, `*.github.io` → `github.io`), null
 * when it sits under a registrable domain (`*.example.co.uk`). By the Public Suffix List (tldts),
 * its private part included: as browsers and ACME CAs refuse such wildcards, one account may not
 * take every other tenant's names under a suffix many registrants share.
 */
function wildcardOverPublicSuffix(host: string): string | null {
  if (!host.startsWith('*.')) return null;
  const covered = host.slice(2);
  return publicSuffixList().getDomain(covered, { allowPrivateDomains: true }) === null ? covered : null;
}

let tldts: typeof Tldts | undefined;

/**
 * tldts (the public suffix list), loaded the first time a wildcard is checked: building its tables
 * took every thread that imported the kinds 30–60 ms, the embedded service's included, for stacks
 * with no wildcard and commands that check none.
 */
function publicSuffixList(): typeof Tldts {
  return (tldts ??= createRequire(import.meta.url)('tldts') as typeof Tldts);
}

/** The stored form of checked hostports: lower case. */
export function normalizeHostports(list: string[]): string[] {
  return list.map((h) => h.toLowerCase());
}

/**
 * Where a stored hostport sits in the DNS tree, for the overlap rule between accounts: the domain
 * a wildcard covers (`*.example.com:443` → `example.com`), the domains above it or above a plain
 * name (`a.b.example.com` → `b.example.com`, `example.com`, `com`), the wildcards that cover it,
 * and the port.
 */
export function hostportPlace(hostport: string): { covers: string | null; above: string[]; coveredBy: string[]; port: string } {
  const colon = hostport.lastIndexOf(':');
  const host = hostport.slice(0, colon);
  const port = hostport.slice(colon + 1);
  const wildcard = host.startsWith('*.');
  const labels = (wildcard ? host.slice(2) : host).split('.');
  const above: string[] = [];
  for (let i = 1; i < labels.length; i++) above.push(labels.slice(i).join('.'));
  // A wildcard is covered by the wildcards of the domains above the one it covers.
  const coveredBy = above.map((d) => `*.${d}:${port}`);
  return { covers: wildcard ? labels.join('.') : null, above, coveredBy, port };
}
