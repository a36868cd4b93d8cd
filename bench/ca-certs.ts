import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import forge from 'node-forge';

/**
 * `count` distinct CA certificates (the service refuses two CAs with the same PEM in one account
 * only through the planner's collision check, but distinct subjects make the data realistic).
 * One RSA key pair signs them all — key generation is the slow part — and the PEMs are cached.
 */
export function caCertificates(count: number, cacheFile: string): string[] {
  if (existsSync(cacheFile)) {
    const cached = JSON.parse(readFileSync(cacheFile, 'utf8')) as string[];
    if (cached.length >= count) return cached.slice(0, count);
  }
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key = forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  const pub = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const cert = forge.pki.createCertificate();
    cert.publicKey = pub;
    cert.serialNumber = (0x1000 + i).toString(16);
    cert.validity.notBefore = new Date('2026-01-01T00:00:00Z');
    cert.validity.notAfter = new Date('2036-01-01T00:00:00Z');
    const attrs = [{ name: 'commonName', value: `edgeplane bench CA ${i}` }, { name: 'organizationName', value: 'edgeplane bench' }];
    cert.setSubject(attrs);
    cert.setIssuer(attrs);
    cert.setExtensions([
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
      { name: 'subjectKeyIdentifier' },
    ]);
    cert.sign(key, forge.md.sha256.create());
    out.push(forge.pki.certificateToPem(cert).replace(/\r\n/g, '\n'));
  }
  mkdirSync(dirname(cacheFile), { recursive: true });
  writeFileSync(cacheFile, JSON.stringify(out));
  return out;
}
