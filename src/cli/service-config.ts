import type { AppOptions } from '../service/app.js';

/** Service settings from the environment (documented in the README). */
export function serviceOptionsFromEnv(env = process.env): Pick<AppOptions, 'publicUrl' | 'versionHeaders' | 'vendorPrefix'> {
  return {
    publicUrl: env.EDGEPLANE_PUBLIC_URL || undefined,
    versionHeaders: env.EDGEPLANE_VERSION_HEADERS ? env.EDGEPLANE_VERSION_HEADERS.split(',') : undefined,
    vendorPrefix: env.EDGEPLANE_VENDOR_PREFIX || undefined,
  };
}
