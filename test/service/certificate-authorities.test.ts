import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certs } from '../helpers/certs.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

describe.each(ENGINES)('certificate authorities on %s', (engine) => {
  let svc: TestService;
  let c: TestClient;
  beforeAll(async () => {
    svc = await startTestService(engine);
    c = await svc.account();
  });
  afterAll(async () => { await svc?.close(); });

  it('derives the fields of an RSA CA', async () => {
    const res = await c.post('/certificate_authorities', { ca_pem: certs.rsaCa.trim() });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      ca_pem: certs.rsaCa.trim() + '\n',
      subject_common_name: 'Edgeplane Test RSA Root',
      key_usages: ['digital_signature', 'cert_sign', 'crl_sign'],
      extended_key_usages: ['client_auth', 'server_auth'],
    });
    expect(res.body.not_before).toMatch(/^2026-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(res.body.not_after).toMatch(/^2126-/);
  });

  it('derives the fields of an EC CA, with no extended key usage', async () => {
    const res = await c.post('/certificate_authorities', { ca_pem: certs.ecCa });
    expect(res.status).toBe(201);
    expect(res.body.subject_common_name).toBe('Edgeplane Test EC Root');
    expect(res.body.key_usages).toEqual(['cert_sign', 'crl_sign']);
    expect(res.body.extended_key_usages).toEqual([]);
  });

  it('gives the common name as the certificate holds it, not escaped as RFC 4514 text', async () => {
    const res = await c.post('/certificate_authorities', { ca_pem: certs.escapedCnCa });
    expect(res.status).toBe(201);
    expect(res.body.subject_common_name).toBe('Acme, Inc. "Root" CA+1 <x>;=# café');
  });

  it.each([
    ['no PEM at all', 'hello', /no PEM block/],
    ['garbage inside the block', '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n', /not a valid X\.509/],
    ['a private key', certs.leafKey, /found PRIVATE KEY/],
    ['a certificate with its key', certs.rsaCa + certs.leafKey, /found PRIVATE KEY/],
    ['two certificates', certs.rsaCa + certs.ecCa, /holds 2 certificates/],
    ['a leaf that is not a CA', certs.leaf, /not a CA/],
  ])('rejects %s with its own 400', async (_name, pem, msg) => {
    const res = await c.post('/certificate_authorities', { ca_pem: pem });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('ERR_INVALID_CA_PEM');
    expect(res.body.msg).toMatch(/^ca_pem: /);
    expect(res.body.msg).toMatch(msg);
  });

  it('rejects derived fields on create and ca_pem on update', async () => {
    const derived = await c.post('/certificate_authorities', { ca_pem: certs.rsaCa, subject_common_name: 'me' });
    expect(derived.status).toBe(400);
    expect(derived.body.msg).toBe("unknown field 'subject_common_name'");
    const { body } = await c.post('/certificate_authorities', { ca_pem: certs.rsaCa, description: 'keep' });
    const res = await c.patch(`/certificate_authorities/${body.id}`, { ca_pem: certs.ecCa });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('ERR_IMMUTABLE_FIELD');
    expect(res.body.msg).toMatch(/^ca_pem: /);
    expect((await c.get(`/certificate_authorities/${body.id}`)).body).toEqual(body);
    // A CA that is not there is a 404, whatever the body asks.
    expect((await c.request('DELETE', `/certificate_authorities/${body.id}`)).status).toBe(204);
    expect((await c.patch(`/certificate_authorities/${body.id}`, { ca_pem: certs.ecCa })).status).toBe(404);
  });
});
