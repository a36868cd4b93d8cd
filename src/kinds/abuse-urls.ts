import { ApiError } from '../contract/errors.js';

const DNS_NAME = /^(?=.{1,253}$)([a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;
const IPV6 = /^\[[0-9a-f:.]+\]$/;

function invalid(i: number, rule: string): ApiError {
  return new ApiError('ERR_VALIDATION', `urls[${i}]: ${rule}`);
}

/**
 * The hostnames of reported URLs: each URL must be an absolute http(s) URL naming one host; the
 * hostnames come back lower case (the URL parser also turns IDNs into punycode), without a
 * trailing dot, deduplicated, in first-seen order. The first bad URL fails the request, named by
 * its index.
 */
export function reportedHostnames(urls: string[]): string[] {
  const seen = new Set<string>();
  urls.forEach((raw, i) => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw invalid(i, `must be an absolute http or https URL, got ${JSON.stringify(raw)}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw invalid(i, `must be an http or https URL, got scheme "${url.protocol.slice(0, -1)}"`);
    }
    const host = url.hostname.toLowerCase().replace(/\.$/, '');
    if (!DNS_NAME.test(host) && !IPV6.test(host)) {
      throw invalid(i, `must name one host (a DNS name or an IP address), got ${JSON.stringify(url.hostname)}`);
    }
    seen.add(host);
  });
  return [...seen];
}
