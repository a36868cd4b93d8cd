/**
 * A URL as edgeplane shows it (a plan's target, the adopt command it suggests, messages): without
 * the user and password a URL may carry (`https://user:pass@api.example`, for a proxy). Plans go
 * into files, CI logs and pull-request comments; only the request needs them. A string that does
 * not parse as a URL is shown with everything before its last `@` masked.
 */
export function withoutCredentials(url: string): string {
  let u: URL | undefined;
  try {
    u = new URL(url);
  } catch {
    u = undefined;
  }
  // Not an http(s) URL (`deploy:pw#1@host` parses as one of scheme `deploy:`): whatever comes before
  // its last `@` may still be a user and password (one holding `#`, `/` or `?` breaks the parse).
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) {
    return url.replace(/^([^:/?#@]*:\/\/)?[^]*@/, (_m, scheme: string | undefined) => `${scheme ?? ''}***@`);
  }
  if (!u.username && !u.password) return url;
  u.username = '';
  u.password = '';
  return u.toString();
}

/**
 * A URL that can go into a header (`Location`, `Link`): as written when it is ASCII, else in its
 * ASCII form (an international host in punycode, the rest percent-encoded). An ASCII URL is never
 * respelt: uris clients and identity providers already hold (a SAML entity id) stay the same.
 */
export function headerSafeUrl(url: string): string {
  return /^[\x20-\x7e]*$/.test(url) ? url : new URL(url).href;
}
