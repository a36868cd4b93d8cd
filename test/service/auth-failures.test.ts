import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AuthFailureLimit } from '../../src/service/auth-failures.js';
import { serverOptionsFromEnv, trustProxyFromEnv, authFailureLimitFromEnv } from '../../src/cli/service-config.js';
import { createKey } from '../../src/service/auth.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

/** A metric's value in a Prometheus text scrape. */
function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}

const get = (url: string, key: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/certificate_authorities`, { headers: { authorization: `Bearer ${key}`, 'service-version': '2', ...headers } });

describe('AuthFailureLimit: failed authentications per address in one-minute windows', () => {
  const limits: AuthFailureLimit[] = [];
  afterEach(() => { for (const l of limits.splice(0)) l.close(); });
  const make = (perMinute: number, max?: number) => {
    const clock = { now: 1_000_000 };
    const limit = new AuthFailureLimit(perMinute, () => clock.now, max);
    limits.push(limit);
    return { limit, clock };
  };

  it('refuses an address past its limit until its window ends, with the seconds left; other addresses are not touched', () => {
    const { limit, clock } = make(3);
    for (let i = 0; i < 3; i++) {
      expect(limit.refusal('10.0.0.1')).toBeUndefined();
      limit.failed('10.0.0.1');
    }
    clock.now += 20_000;
    const refused = limit.refusal('10.0.0.1');
    expect(refused?.code).toBe('ERR_AUTH_FAILURES');
    expect(refused?.status).toBe(429);
    expect(refused?.headers['retry-after']).toBe('40');
    expect(limit.refusal('10.0.0.2')).toBeUndefined();
    expect(limit.refused).toBe(1);
    expect(limit.failures).toBe(3);
    clock.now += 40_000;
    expect(limit.refusal('10.0.0.1')).toBeUndefined();
    limit.failed('10.0.0.1');
    expect(limit.refusal('10.0.0.1')).toBeUndefined(); // a new window: one failure so far
  });

  it('tracks at most its bound of addresses; ended windows make room', () => {
    const { limit, clock } = make(1, 3);
    for (const a of ['a', 'b', 'c', 'd']) limit.failed(a);
    expect(limit.tracked).toBe(3);
    expect(limit.refusal('d')).toBeUndefined(); // not tracked: not refused
    expect(limit.refusal('a')?.status).toBe(429);
    clock.now += 60_000;
    limit.failed('d');
    expect(limit.tracked).toBe(1);
    expect(limit.refusal('d')?.status).toBe(429);
  });
});

describe('EDGEPLANE_AUTH_FAILURE_LIMIT and EDGEPLANE_TRUST_PROXY', () => {
  it('read the limit (default 60, 0 for none) and refuse a value that is not a whole number', () => {
    expect(authFailureLimitFromEnv({})).toBe(60);
    expect(authFailureLimitFromEnv({ EDGEPLANE_AUTH_FAILURE_LIMIT: '0' })).toBe(0);
    expect(() => authFailureLimitFromEnv({ EDGEPLANE_AUTH_FAILURE_LIMIT: 'lots' })).toThrow(/EDGEPLANE_AUTH_FAILURE_LIMIT: must be a whole number/);
  });

  it('take addresses, CIDR ranges, proxy-addr\'s range names or a hop count, and refuse anything else by name', () => {
    expect(trustProxyFromEnv({})).toBeUndefined();
    expect(trustProxyFromEnv({ EDGEPLANE_TRUST_PROXY: '1' })).toBe(1);
    expect(trustProxyFromEnv({ EDGEPLANE_TRUST_PROXY: ' 10.0.0.0/8, ::1, loopback ' })).toBe('10.0.0.0/8,::1,loopback');
    expect(serverOptionsFromEnv({ EDGEPLANE_TRUST_PROXY: '192.168.1.2' }).trustProxy).toBe('192.168.1.2');
    for (const bad of ['true', '10.0.0.0/33', 'proxy.example.com', '0', '10.0.0.1/8/1']) {
      expect(() => trustProxyFromEnv({ EDGEPLANE_TRUST_PROXY: bad }), bad).toThrow(/EDGEPLANE_TRUST_PROXY: /);
    }
  });
});

describe.each(ENGINES)('unknown API keys counted per client address (%s)', (engine) => {
  let svc: TestService;
  let proxied: TestService;
  let user: TestClient;

  beforeAll(async () => {
    svc = await startTestService(engine, { authFailureLimit: 3, ui: true });
    // The same database behind a trusted proxy (this test's own address): X-Forwarded-For names the client.
    proxied = await startTestService(engine, { authFailureLimit: 3, server: { ...serverOptionsFromEnv({}), trustProxy: '127.0.0.1' } }, svc);
    user = await svc.account();
  });
  afterAll(async () => {
    await proxied?.close();
    await svc?.close();
  });

  it('answers 401 for the limit\'s unknown keys, then 429 ERR_AUTH_FAILURES with Retry-After before any look-up; a key used just before is still served', async () => {
    expect((await user.get('/certificate_authorities')).status).toBe(200); // looked up, now cached
    for (let i = 0; i < 3; i++) {
      const res = await get(svc.url, `ep_guess${i}`);
      expect(res.status).toBe(401);
      expect((await res.json() as { error_code: string }).error_code).toBe('ERR_UNAUTHORIZED');
    }
    const refused = await get(svc.url, 'ep_guess3');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    const body = await refused.json() as { error_code: string; msg: string; details: { operation_id: string } };
    expect(body.error_code).toBe('ERR_AUTH_FAILURES');
    expect(body.msg).toMatch(/more than 3 unknown or revoked API keys/);
    expect(body.details.operation_id).toMatch(/^op_/);
    // The user's key was looked up in the last seconds: served from the cache, no look-up to refuse.
    expect((await user.get('/certificate_authorities')).status).toBe(200);
    // A key never seen needs a look-up: refused too while the address is over (docs/operations.md).
    const fresh = await createKey(svc.db, user.accountId);
    expect((await get(svc.url, fresh.api_key)).status).toBe(429);
    const scrape = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metric(scrape, 'edgeplane_auth_failures_total')).toBe(3);
    expect(metric(scrape, 'edgeplane_auth_failures_refused_total')).toBe(2);
  });

  it('counts the status page\'s sign-ins and session cookies with the API\'s keys', async () => {
    // This address is over its limit from the test above (one window, one minute).
    const login = await fetch(`${svc.url}/ui/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ api_key: 'ep_wrong' }), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(login.status).toBe(429);
    expect(login.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await login.text()).toMatch(/unknown or revoked API keys or sessions/);
    const page = await fetch(`${svc.url}/ui/`, { redirect: 'manual', headers: { cookie: 'edgeplane_session=forged' } });
    expect(page.status).toBe(429);
  });

  it('behind a trusted proxy counts each client address apart; an untrusted X-Forwarded-For is ignored', async () => {
    for (let i = 0; i < 3; i++) expect((await get(proxied.url, `ep_x${i}`, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(401);
    expect((await get(proxied.url, 'ep_x3', { 'x-forwarded-for': '203.0.113.7' })).status).toBe(429);
    // Another client through the same proxy: its own count.
    expect((await get(proxied.url, 'ep_y0', { 'x-forwarded-for': '203.0.113.8' })).status).toBe(401);
    // Without a trusted proxy the header names nothing: this address is over its limit whatever it says.
    expect((await get(svc.url, 'ep_z0', { 'x-forwarded-for': '198.51.100.1' })).status).toBe(429);
  });
});
