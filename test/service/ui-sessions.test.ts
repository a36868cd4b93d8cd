import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, revokeKey } from '../../src/service/auth.js';
import { ENGINES, startTestService, type TestClient, type TestService } from '../helpers/service.js';

const COUNTS = { create: 1, update: 0, replace: 0, delete: 0 };

/** A browser's side of the status page: its cookie, forms posted as forms. */
class Browser {
  cookie = '';
  constructor(readonly base: string) {}
  async get(path: string, headers: Record<string, string> = {}) {
    const res = await fetch(this.base + path, { redirect: 'manual', headers: { cookie: this.cookie, ...headers } });
    return { status: res.status, location: res.headers.get('location'), text: await res.text(), headers: res.headers };
  }
  async form(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
    const res = await fetch(this.base + path, {
      method: 'POST', redirect: 'manual', body: new URLSearchParams(fields),
      headers: { cookie: this.cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    });
    const set = res.headers.get('set-cookie');
    if (set) this.cookie = set.split(';')[0];
    return { status: res.status, location: res.headers.get('location'), text: await res.text(), setCookie: set };
  }
  async signIn(key: string) {
    const r = await this.form('/ui/login', { api_key: key });
    expect(r.status, r.text).toBe(303);
    return r;
  }
  async csrf(): Promise<string> {
    const page = await this.get('/ui/');
    return /name="csrf" value="([^"]+)"/.exec(page.text)![1];
  }
}

describe.each(ENGINES)('the status page\'s sessions and scoping (%s)', (engine) => {
  let svc: TestService;
  let a: TestClient;
  let b: TestClient;

  beforeAll(async () => {
    svc = await startTestService(engine, { ui: true, authCacheMs: 0 });
    a = await svc.account();
    b = await svc.account();
  });
  afterAll(async () => svc?.close());

  it('opens a session for a valid key only, and the cookie is HttpOnly, SameSite=Strict, bounded in time', async () => {
    const browser = new Browser(svc.url);
    const bad = await browser.form('/ui/login', { api_key: 'ep_unknown' });
    expect(bad.status).toBe(401);
    expect(bad.setCookie).toBeNull();
    expect(bad.text).toContain('That API key is not valid');
    const good = await browser.signIn(a.apiKey!);
    expect(good.setCookie).toMatch(/^edgeplane_session=[\w-]{40,}; Max-Age=43200; Path=\/ui; HttpOnly; SameSite=Strict$/);
    // The token is kept only as its hash.
    const token = browser.cookie.split('=')[1];
    const { rows } = await svc.db.query<{ token_hash: string }>('SELECT token_hash FROM ui_sessions');
    expect(rows.map((r) => r.token_hash)).not.toContain(token);
    expect((await browser.get('/ui/')).status).toBe(200);
  });

  it('shows one account\'s stacks and runs only', async () => {
    const run = await a.post('/sync_runs', { stack: 'shop', trigger: 'cli', holder: 'ann@laptop', outcome: 'applied', counts: COUNTS, plan_markdown: '### plan for `shop`\n\n| field | before | after |\n|---|---|---|\n| `description` | `"<b>x</b>"` | `<script>alert(1)</script>` |' });
    expect(run.status, run.text).toBe(201);
    const ann = new Browser(svc.url);
    await ann.signIn(a.apiKey!);
    const bob = new Browser(svc.url);
    await bob.signIn(b.apiKey!);
    expect((await ann.get('/ui/')).text).toContain('data-stack="shop"');
    expect((await bob.get('/ui/')).text).not.toContain('shop');
    const mine = await ann.get(`/ui/runs/${run.body.id}`);
    expect(mine.text).toContain('plan for');
    // The plan's markup is text, never a tag.
    expect(mine.text).not.toContain('<script>alert');
    expect(mine.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect((await bob.get(`/ui/runs/${run.body.id}`)).text).toContain('Run not found');
    // A run's policies: what they found, and each override with its reason (escaped, as every value).
    const guarded = await a.post('/sync_runs', { stack: 'shop', trigger: 'cli', holder: 'ann@laptop', outcome: 'applied', counts: COUNTS, policy: { denied: 1, warned: 2, overrides: [{ policy: 'cap-edge-deletes', reason: 'INC-1 <b>retire</b>' }] } });
    const page = (await ann.get(`/ui/runs/${guarded.body.id}`)).text;
    expect(page).toContain('<dt>policies</dt><dd>1 denied, 2 warned</dd>');
    expect(page).toContain('<dt>overridden</dt><dd><code>cap-edge-deletes</code>: INC-1 &#60;b&#62;retire&#60;/b&#62;</dd>');
    // Sync now from Bob's page asks for a sync of Bob's stack, not Ann's.
    const csrf = await bob.csrf();
    expect((await bob.form('/ui/stacks/shop/sync', { csrf })).status).toBe(303);
    expect((await a.get('/stacks/shop')).body.sync_requested_at).toBeNull();
    expect((await b.get('/stacks/shop')).body.sync_requested_at).not.toBeNull();
  });

  it('signs in with a read key, which reads every page but cannot Sync now', async () => {
    expect((await a.post('/sync_runs', { stack: 'ro', trigger: 'cli', holder: 'ann@laptop', outcome: 'applied', counts: COUNTS })).status).toBe(201);
    const reader = new Browser(svc.url);
    await reader.signIn((await createKey(svc.db, a.accountId, 'read')).api_key);
    expect((await reader.get('/ui/')).text).toContain('data-stack="ro"');
    const page = await reader.get('/ui/stacks/ro');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Signed in with a read key: Sync now needs a key of scope write.');
    expect(page.text).not.toContain('Sync now</button>');
    const refused = await reader.form('/ui/stacks/ro/sync', { csrf: await reader.csrf() });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('this API key has scope read; Sync now needs write');
    expect((await a.get('/stacks/ro')).body.sync_requested_at).toBeNull();
    // A write key's page has the button.
    const writer = new Browser(svc.url);
    await writer.signIn(a.apiKey!);
    expect((await writer.get('/ui/stacks/ro')).text).toContain('Sync now</button>');
  });

  it('lists the objects that carry a stack\'s marker, and only those', async () => {
    const marker = (stack: string, id: string) => JSON.stringify({ managed_by: { id, stack, tool: 'edgeplane', v: 1 } });
    const made = async (metadata: string) => {
      const r = await a.post('/backends/failover', { backends: [], metadata });
      expect(r.status, r.text).toBe(201);
      return r.body.id as string;
    };
    const mine = await made(marker('s_op', 'FailoverBackend/mine'));
    const other = await made(marker('sxop', 'FailoverBackend/other')); // `_` is no wildcard here
    const text = await made('notes: "stack":"s_op","tool":"edgeplane" is only text'); // the user's own string
    const ann = new Browser(svc.url);
    await ann.signIn(a.apiKey!);
    const page = (await ann.get('/ui/stacks/s_op')).text;
    expect(page).toContain(mine);
    expect(page).toContain('FailoverBackend/mine');
    expect(page).not.toContain(other);
    expect(page).not.toContain(text);
    const bob = new Browser(svc.url);
    await bob.signIn(b.apiKey!);
    expect((await bob.get('/ui/stacks/s_op')).text).not.toContain(mine);
  });

  it('refuses a form without the session\'s token or from another site, and changes nothing', async () => {
    const browser = new Browser(svc.url);
    await browser.signIn(a.apiKey!);
    const csrf = await browser.csrf();
    expect((await browser.form('/ui/stacks/web/sync', { csrf: (csrf[0] === 'x' ? 'y' : 'x') + csrf.slice(1) })).status).toBe(403);
    expect((await browser.form('/ui/stacks/web/sync', { csrf }, { origin: 'https://evil.example' })).status).toBe(403);
    expect((await a.request('GET', '/stacks/web')).status).toBe(404);
    expect((await browser.form('/ui/logout', {})).status).toBe(403);
    expect((await browser.get('/ui/')).status).toBe(200);
  });

  it('ends a session at sign-out and when its key is revoked', async () => {
    const browser = new Browser(svc.url);
    await browser.signIn(a.apiKey!);
    const csrf = await browser.csrf();
    const out = await browser.form('/ui/logout', { csrf });
    expect(out.status).toBe(303);
    expect(out.setCookie).toMatch(/Max-Age=0/);
    const old = browser.cookie;
    browser.cookie = old.replace(/=.*/, '=') ; // the browser dropped it; the old token must not work either
    const replayed = new Browser(svc.url);
    replayed.cookie = old;
    expect((await replayed.get('/ui/')).status).toBe(303);

    const c = await svc.account();
    const held = new Browser(svc.url);
    await held.signIn(c.apiKey!);
    expect((await held.get('/ui/')).status).toBe(200);
    const keyId = (await svc.db.query<{ id: string }>('SELECT id FROM api_keys WHERE account_id = $1', [c.accountId])).rows[0].id;
    expect(await revokeKey(svc.db, keyId)).toBe(true);
    const after = await held.get('/ui/');
    expect(after.status).toBe(303);
    expect(after.location).toBe('/ui/login?next=%2Fui%2F');
    expect((await held.get('/ui/parts/stacks', { 'x-edgeplane-fragment': '1' })).status).toBe(401);
  });

  it('answers odd input with a page, never a 500', async () => {
    const browser = new Browser(svc.url);
    await browser.signIn(a.apiKey!);
    for (const path of ['/ui/objects?kind=nope&before=x&before=y', '/ui/objects?before=%00', '/ui/?after=..&after=x', '/ui/stacks/NOT%20A%20STACK?before=zz', '/ui/runs/%3Cscript%3E', '/ui/nowhere']) {
      const r = await browser.get(path);
      expect(r.status, path).toBeLessThan(500);
      expect(r.text, path).not.toContain('<script>');
    }
    const huge = await browser.form('/ui/login', { api_key: 'x'.repeat(10_000) });
    expect(huge.status).toBe(413);
  });
  it('a drift check\'s objects: Drifted where the plan marked drift, Not applied for a change of the manifests, Drifted when the record does not say', async () => {
    const marker = (id: string) => JSON.stringify({ managed_by: { id, stack: 'dr', tool: 'edgeplane', v: 1 } });
    for (const name of ['moved', 'edited', 'old']) {
      const r = await a.post('/backends/failover', { backends: [], metadata: marker(`FailoverBackend/${name}`) });
      expect(r.status, r.text).toBe(201);
    }
    const objects = [
      { identity: 'FailoverBackend/moved', action: 'update', fields: ['description'], drift: true },
      { identity: 'FailoverBackend/edited', action: 'update', fields: ['backends'], drift: false },
      { identity: 'FailoverBackend/old', action: 'update', fields: ['description'] },
    ];
    const posted = await a.post('/sync_runs', { stack: 'dr', trigger: 'interval', holder: 'agent-1', outcome: 'drifted', counts: { ...COUNTS, create: 0, update: 3 }, drift_count: 3, objects });
    expect(posted.status, posted.text).toBe(201);
    expect(posted.body.objects).toEqual(objects);
    const browser = new Browser(svc.url);
    await browser.signIn(a.apiKey!);
    const page = (await browser.get('/ui/stacks/dr')).text;
    const cellOf = (id: string) => new RegExp(`<code>FailoverBackend/${id}</code>.*?<td class="drift">(.*?)</td>`, 's').exec(page)![1].replace(/<[^>]+>/g, '').trim();
    expect(cellOf('moved')).toBe('Drifted description');
    expect(cellOf('edited')).toBe('Not applied backends');
    expect(cellOf('old')).toBe('Drifted description');
  });
});
