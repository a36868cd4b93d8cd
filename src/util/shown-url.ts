/**
 * A URL as edgeplane shows it (a plan's target, the adopt command it suggests, messages): without
 * the user and password a URL may carry (`https://user:pass@api.example`, for a proxy). Plans go
 * into files, CI logs and pull-request comments; only the request needs them. A string that does
 * not parse as a URL is returned as it is (nothing was sent to it).
 */
export function withoutCredentials(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  if (!u.username && !u.password) return url;
  u.username = '';
  u.password = '';
  return u.toString();
}
