import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import forge from 'node-forge';

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

/** A self-signed certificate for localhost and 127.0.0.1, made now (nothing secret in the repository): for `serve --tls-cert`. */
export function selfSigned(): { cert: string; key: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  const name = [{ name: 'commonName', value: 'localhost' }];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }]);
  cert.sign(forge.pki.privateKeyFromPem(keyPem), forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: keyPem };
}
