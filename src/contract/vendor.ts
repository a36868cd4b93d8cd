/**
 * The deployment's version headers and vendor prefix, from its settings. Kept apart from the app
 * (fastify and every route) so the reconciler's commands can read the prefix without loading the
 * service.
 */
export interface VendorOptions {
  /** Version headers the service accepts, case-insensitive (`Service-Version`, `Ngrok-Version`); the first is the canonical one. Default `Service-Version`. */
  versionHeaders?: string[];
  /** Lower-case vendor prefix (session cookie default `<prefix>.`); default: the first version header's prefix. */
  vendorPrefix?: string;
}

export function acceptedVersionHeaders(opts: Pick<VendorOptions, 'versionHeaders'>): string[] {
  return (opts.versionHeaders?.length ? opts.versionHeaders : ['Service-Version']).map((h) => h.trim()).filter(Boolean);
}

/** The deployment's lower-case vendor prefix; the reconciler needs it for the cookie-prefix default. */
export function resolveVendorPrefix(opts: VendorOptions): string {
  return (opts.vendorPrefix ?? acceptedVersionHeaders(opts)[0].replace(/-version$/i, '')).toLowerCase();
}
