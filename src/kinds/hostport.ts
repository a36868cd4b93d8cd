import { ApiError } from '../service/errors.js';
import { dnsNameProblem } from './dns.js';

/** The port an HTTPS edge listens on: the only one its hostports may name. */
export const HTTPS_PORT = 443;

/**
 * Validates and canonicalises the hostports of an HTTPS edge: `host:443`, a DNS name (a leading
 * `*.` wildcard allowed), lower case (DNS names are case-insensitive and uniqueness across the
 * service compares the lower-case form), no repeats.
 */
export function normalizeHostports(list: string[]): string[] {
  const seen = new Map<string, number>();
  return list.map((raw, i) => {
    const field = `hostports[${i}]`;
    const value = raw.toLowerCase();
    const colon = value.lastIndexOf(':');
    if (colon < 0) throw invalid(field, raw, `must be host:port, like example.com:${HTTPS_PORT}`);
    const host = value.slice(0, colon);
    const port = value.slice(colon + 1);
    if (port !== String(HTTPS_PORT)) throw invalid(field, raw, `port must be ${HTTPS_PORT} on an HTTPS edge`);
    const problem = dnsNameProblem(host, { wildcard: true });
    if (problem) throw invalid(field, raw, `host ${problem}`);
    const first = seen.get(value);
    if (first !== undefined) throw invalid(field, raw, `repeats hostports[${first}] (hostports are case-insensitive)`);
    seen.set(value, i);
    return value;
  });
}

function invalid(field: string, value: string, rule: string): ApiError {
  return new ApiError('ERR_VALIDATION', `${field}: ${JSON.stringify(value.length > 300 ? value.slice(0, 300) + '…' : value)} ${rule}`);
}
