import { readFileSync } from 'node:fs';

const dir = new URL('../fixtures/certs/', import.meta.url);

/** Test certificates made once with openssl (see test/fixtures/certs/README.md). */
export const certs = {
  rsaCa: readFileSync(new URL('rsa-ca.pem', dir), 'utf8'),
  rsaCa2: readFileSync(new URL('rsa-ca-2.pem', dir), 'utf8'),
  ecCa: readFileSync(new URL('ec-ca.pem', dir), 'utf8'),
  escapedCnCa: readFileSync(new URL('escaped-cn-ca.pem', dir), 'utf8'),
  leaf: readFileSync(new URL('leaf.pem', dir), 'utf8'),
  leafKey: readFileSync(new URL('leaf.key.pem', dir), 'utf8'),
};
