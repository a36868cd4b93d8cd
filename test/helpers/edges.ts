import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { Response, TestClient } from './service.js';

const fixture = (p: string) => readFileSync(new URL(`../fixtures/${p}`, import.meta.url), 'utf8');

export const IDP_METADATA = fixture('saml/idp-metadata.xml');
export const IDP_METADATA_DEFAULT_NS = fixture('saml/idp-metadata-default-ns.xml');
export const CA_PEM = fixture('certs/rsa-ca.pem');
export const CA_PEM_2 = fixture('certs/rsa-ca-2.pem');

/** A hostport no other test uses (hostports are unique across the whole service). */
export function hostport(): string {
  return `h${randomBytes(6).toString('hex')}.example.com:443`;
}

/** A syntactically valid id with this prefix that names nothing. */
export function fakeId(prefix: string): string {
  return `${prefix}_${randomBytes(20).toString('base64').replace(/[^0-9A-Za-z]/g, '').padEnd(27, 'x').slice(0, 27)}`;
}

export async function created(res: Promise<Response>): Promise<any> {
  const r = await res;
  expect(r.status, r.text).toBe(201);
  return r.body;
}

export async function newEdge(c: TestClient, body: Record<string, unknown> = {}): Promise<any> {
  return created(c.post('/edges/https', { hostports: [hostport()], ...body }));
}

export async function newRoute(c: TestClient, edgeId: string, body: Record<string, unknown> = {}): Promise<any> {
  return created(c.post(`/edges/https/${edgeId}/routes`, { match_type: 'path_prefix', match: '/' + randomBytes(4).toString('hex'), ...body }));
}

export async function newCa(c: TestClient, pem = CA_PEM): Promise<any> {
  return created(c.post('/certificate_authorities', { ca_pem: pem }));
}

export async function newFailover(c: TestClient): Promise<any> {
  return created(c.post('/backends/failover', { backends: [fakeId('bkdhr')] }));
}

/** A 4xx with the full error body whose message names `field`. */
export function expectRejected(r: Response, field: string, status = 400): void {
  expect(r.status, r.text).toBe(status);
  expect(r.body).toMatchObject({ error_code: expect.stringMatching(/^ERR_/), status_code: status, msg: expect.any(String), details: { operation_id: expect.stringMatching(/^op_/) } });
  expect(r.body.msg).toContain(field);
}
