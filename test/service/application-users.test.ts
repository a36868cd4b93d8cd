import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationUsers, checkUserRecords, UserRecordError } from '../../src/service/routes/application-users.js';
import type { Db, Queryable } from '../../src/store/db.js';
import { ENGINES, startTestService, type TestService } from '../helpers/service.js';

const google = { name: 'Google', url: 'https://accounts.google.com' };

describe.each(ENGINES)('application users on %s', (engine) => {
  let svc: TestService;
  let users: ApplicationUsers;
  beforeAll(async () => {
    svc = await startTestService(engine);
    users = new ApplicationUsers(svc.db, { vendorPrefix: 'service' }, svc.url);
  });
  afterAll(async () => { await svc?.close(); });

  const countIn = async (accountId: string) =>
    Number((await svc.db.query(`SELECT count(*) AS n FROM objects WHERE kind = 'applicationUser' AND account_id = $1`, [accountId])).rows[0].n);

  it('lists 250 users in pages, newest first, and imports them idempotently', async () => {
    const c = await svc.account();
    const records = Array.from({ length: 250 }, (_, i) => ({
      account_id: c.accountId, identity_provider: google, provider_user_id: `g-${i}`,
      email: `user${i}@example.com`, last_login: '2026-01-02T03:04:05Z',
    }));
    const first = await users.import(records);
    expect(first).toMatchObject({ created: 250, updated: 0, unchanged: 0 });
    const again = await users.import(records);
    expect(again).toMatchObject({ created: 0, updated: 0, unchanged: 250 });
    expect(await countIn(c.accountId)).toBe(250);

    const expected = first.users.map((u) => u.id as string).reverse();
    const seen: string[] = [];
    let next: string | null = `${svc.url}/app/users`;
    const sizes: number[] = [];
    while (next) {
      const page = await c.get(next.slice(svc.url.length));
      expect(page.status).toBe(200);
      expect(page.body.uri).toBe(`${svc.url}/app/users`);
      sizes.push(page.body.application_users.length);
      seen.push(...page.body.application_users.map((u: { id: string }) => u.id));
      next = page.body.next_page_uri;
    }
    expect(sizes).toEqual([100, 100, 50]);
    expect(seen).toEqual(expected);
    const small = await c.get('/app/users?limit=7');
    expect(small.body.next_page_uri).toBe(`${svc.url}/app/users?before_id=${expected[6]}&limit=7`);
  });

  it('returns the spec fields and offers get, list and delete only', async () => {
    const c = await svc.account();
    const { outcome, user } = await users.record({
      account_id: c.accountId, identity_provider: google, provider_user_id: '1234',
      username: 'ada', email: 'ada@example.com', name: 'Ada Lovelace', last_login: '2026-03-04T05:06:07.891+01:00',
    });
    expect(outcome).toBe('created');
    const got = await c.get(`/app/users/${user.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      id: expect.stringMatching(/^usr_[0-9A-Za-z]{27}$/),
      uri: `${svc.url}/app/users/${user.id}`,
      created_at: expect.stringMatching(/Z$/),
      identity_provider: google,
      provider_user_id: '1234',
      username: 'ada',
      email: 'ada@example.com',
      name: 'Ada Lovelace',
      last_active: '2026-03-04T04:06:07Z',
      last_login: '2026-03-04T04:06:07Z',
    });
    expect(got.body).toEqual(user);

    for (const [method, path] of [['POST', '/app/users'], ['PATCH', `/app/users/${user.id}`], ['PUT', `/app/users/${user.id}`]]) {
      const res = await c.request(method, path, { name: 'x' });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.body.error_code).toBe('ERR_METHOD_NOT_ALLOWED');
    }
    const other = await svc.account();
    expect((await other.get(`/app/users/${user.id}`)).status).toBe(404);
    expect((await other.delete(`/app/users/${user.id}`)).status).toBe(404);

    const del = await c.delete(`/app/users/${user.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await c.get(`/app/users/${user.id}`)).status).toBe(404);
    expect((await c.delete(`/app/users/${user.id}`)).status).toBe(404);
    expect((await c.get('/app/users')).body).toEqual({ application_users: [], uri: `${svc.url}/app/users`, next_page_uri: null });
    // Signing in again after a delete makes a new user.
    const back = await users.record({ account_id: c.accountId, identity_provider: google, provider_user_id: '1234' });
    expect(back.outcome).toBe('created');
    expect(back.user.id).not.toBe(user.id);
  });

  it('records by provider URL and provider user id: updates, never duplicates, times only move forward', async () => {
    const c = await svc.account();
    const base = { account_id: c.accountId, identity_provider: google, provider_user_id: 'u1', last_login: '2026-05-01T00:00:00Z' };
    const a = await users.record(base);
    expect(a.outcome).toBe('created');
    expect(await users.record(base)).toMatchObject({ outcome: 'unchanged', user: { id: a.user.id } });
    // Same provider (URL spelled differently, new display name): same user, label updated.
    const renamed = await users.record({ ...base, identity_provider: { name: 'Google Accounts', url: 'HTTPS://Accounts.Google.com/' }, name: 'Bob' });
    expect(renamed).toMatchObject({ outcome: 'updated', user: { id: a.user.id, name: 'Bob', identity_provider: { name: 'Google Accounts' } } });
    // The URL keeps its stored spelling: the other spelling again changes nothing (no flip-flop).
    expect((renamed.user.identity_provider as { url: string }).url).toBe(google.url);
    expect((await users.record({ ...base, identity_provider: { name: 'Google Accounts', url: 'HTTPS://Accounts.Google.com/' }, name: 'Bob' })).outcome).toBe('unchanged');
    const later = await users.record({ ...base, last_login: '2026-06-01T00:00:00Z' });
    expect(later.user).toMatchObject({ id: a.user.id, last_login: '2026-06-01T00:00:00Z', last_active: '2026-06-01T00:00:00Z' });
    const earlier = await users.record({ ...base, last_login: '2026-01-01T00:00:00Z' });
    expect(earlier).toMatchObject({ outcome: 'unchanged', user: { last_login: '2026-06-01T00:00:00Z' } });
    const active = await users.record({ ...base, last_active: '2026-07-01T00:00:00Z', last_login: undefined });
    expect(active.user).toMatchObject({ last_login: '2026-06-01T00:00:00Z', last_active: '2026-07-01T00:00:00Z' });

    // Another provider, or another account: another user.
    expect((await users.record({ ...base, identity_provider: { name: 'GitHub', url: 'https://github.com' } })).outcome).toBe('created');
    const d = await svc.account();
    expect((await users.record({ ...base, account_id: d.accountId })).outcome).toBe('created');
    expect(await countIn(c.accountId)).toBe(2);

    // Concurrent first sign-ins of one user make one user.
    const racing = await Promise.all(Array.from({ length: 5 }, () => users.record({ ...base, provider_user_id: 'race' })));
    expect(new Set(racing.map((r) => r.user.id)).size).toBe(1);
    expect(await countIn(c.accountId)).toBe(3);
  });

  it('checks every imported record before writing any, naming each problem', async () => {
    const c = await svc.account();
    const err = await users.import([
      { account_id: c.accountId, identity_provider: google, provider_user_id: 'ok' },
      { account_id: c.accountId, identity_provider: { name: 'X' }, provider_user_id: 'p' },
      { identity_provider: google, provider_user_id: 'p', email: 5 },
      { account_id: c.accountId, identity_provider: google, provider_user_id: 'p', last_login: 'yesterday', shoe_size: 9 },
      'nope',
    ]).catch((e) => e);
    expect(err).toBeInstanceOf(UserRecordError);
    expect(err.problems).toEqual([
      'users[1].identity_provider.url: is required',
      'users[2].account_id: is required',
      'users[2].email: must be string',
      "users[3].unknown field 'shoe_size'",
      'users[4]: must be an object',
    ]);
    expect(await countIn(c.accountId)).toBe(0);
    await expect(users.record({ account_id: 'acct_nope', identity_provider: google, provider_user_id: 'x' })).rejects.toThrow(/account acct_nope does not exist/);
    await expect(users.record({ account_id: c.accountId, identity_provider: { name: 'G', url: 'accounts.google.com' }, provider_user_id: 'x' }))
      .rejects.toThrow('identity_provider.url: must be an absolute http or https URL');
  });

  it('imports all or nothing: an unknown account or text the database cannot hold is found before anything is written', async () => {
    const c = await svc.account();
    const ok = { account_id: c.accountId, identity_provider: google, provider_user_id: 'first' };
    const err = await users.import([
      ok,
      { account_id: 'acct_nope', identity_provider: google, provider_user_id: 'p2' },
      { account_id: c.accountId, identity_provider: google, provider_user_id: 'p3', name: 'a\u0000b' },
    ]).catch((e) => e);
    expect(err).toBeInstanceOf(UserRecordError);
    expect(err.problems).toEqual([
      'users[2].name: text may not contain U+0000 or an unpaired UTF-16 surrogate',
      'users[1].account_id: account acct_nope does not exist',
    ]);
    expect(await countIn(c.accountId)).toBe(0);
    // A database failure while writing (the second user's insert, forced here) rolls back the first.
    let inserts = 0;
    const failing: Db = {
      ...svc.db,
      query: (sql, params) => svc.db.query(sql, params),
      tx: (fn) => svc.db.tx((q) => fn({
        query: (sql: string, params?: unknown[]) => {
          if (/^\s*INSERT INTO objects/i.test(sql) && ++inserts === 2) return Promise.reject(new Error('disk full'));
          return q.query(sql, params);
        },
      } as Queryable)),
    } as Db;
    const two = [ok, { ...ok, provider_user_id: 'second' }];
    await expect(new ApplicationUsers(failing, { vendorPrefix: 'service' }, svc.url).import(two)).rejects.toThrow('disk full');
    expect(inserts).toBe(2);
    expect(await countIn(c.accountId)).toBe(0);
    expect((await users.import([ok])).created).toBe(1);
  });
});

describe('user record checks', () => {
  it('take linear time on a long provider URL that is not one (no backtracking over it)', () => {
    const long = 'https://' + 'a'.repeat(200_000) + ' x';
    const t0 = performance.now();
    const problems = checkUserRecords([{ account_id: 'acc_1', identity_provider: { name: 'P', url: long }, provider_user_id: 'u' }]);
    const ms = performance.now() - t0;
    expect(problems.join('\n')).toMatch(/identity_provider\.url/);
    // A quadratic pattern took minutes on this; a linear one takes about a millisecond.
    expect(ms).toBeLessThan(1000);
  });
});
