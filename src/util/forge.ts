import { createRequire } from 'node:module';
import type forge from 'node-forge';

let lib: typeof forge | undefined;

/**
 * node-forge, loaded the first time a certificate is read or made (a CA's key usages, a SAML
 * signing certificate), not by every command that only imports the kind descriptions.
 */
export function forgeLib(): typeof forge {
  return (lib ??= createRequire(import.meta.url)('node-forge') as typeof forge);
}
