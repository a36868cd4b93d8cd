import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseCookie, serialize as serializeCookie } from 'cookie';
import { html } from 'ghtml';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../contract/errors.js';
import { stackRefusalMessage } from '../../contract/stack-name.js';
import { Authenticator, scopeCovers } from '../auth.js';
import type { AuthFailureLimit } from '../auth-failures.js';
import { Resources } from '../writes/resources.js';
import { notice, page, type Section } from './layout.js';
import { OBJECT_TABS, objectsSection } from './objects-page.js';
import { csrfMatches, SESSION_TTL_MS, UiSessions, type UiSession } from './sessions.js';
import { stackRecords } from './records.js';
import { RUNS_PAGE_SIZE, runSection, runsTable, stackFacts, stackSection, stacksSection, STACKS_PAGE_SIZE, stacksTable } from './stacks-page.js';

export interface UiOptions {
  /** The vendor prefix of the API's responses (the objects page reads them as the API answers them). */
  vendorPrefix: string;
  /** Base of `uri`s in the objects' bodies; default: the request's. */
  publicUrl?: string;
  authCacheMs?: number;
  /** Unknown keys and sessions counted per client address (`auth-failures.ts`), with the API's. */
  authFailures?: AuthFailureLimit;
  /** Whether the service speaks HTTPS itself: the session cookie is then `Secure`. */
  tls: boolean;
}

declare module 'fastify' {
  interface FastifyRequest { uiSession?: UiSession | null }
}

const COOKIE = 'edgeplane_session';

/** Every page and part: no script but the page's own file, no frame, no referrer, nothing inline. */
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
} as const;

const STATIC_DIR = new URL('./static/', import.meta.url);
const STATIC_TYPES: Record<string, string> = { 'ui.css': 'text/css; charset=utf-8', 'ui.js': 'text/javascript; charset=utf-8' };

/** The page's two files, read once: what the package ships beside this module. */
function loadStatic(): Map<string, { body: Buffer; type: string; etag: string }> {
  const files = new Map<string, { body: Buffer; type: string; etag: string }>();
  for (const [name, type] of Object.entries(STATIC_TYPES)) {
    const body = readFileSync(new URL(name, STATIC_DIR));
    files.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return files;
}

/**
 * The status page at `/ui/`: server-rendered HTML (ghtml templates, every value escaped), one
 * style sheet and one small script, no build step and no request anywhere but this service. A
 * browser signs in with an API key once (`sessions.ts`); every page then shows that key's
 * account only, read through the same operations the API answers with (`Resources`), so secrets
 * are never there to show. Forms are protected against cross-site requests three ways: the
 * `SameSite=Strict` cookie, a per-session CSRF token in each form, and the `Origin` check.
 */
export async function uiPlugin(app: FastifyInstance, opts: UiOptions): Promise<void> {
  const sessions = new UiSessions(app.db, new Authenticator(app.db, opts.authCacheMs), opts.authCacheMs);
  const resources = new Resources(app.db, { vendorPrefix: opts.vendorPrefix }, app.secrets);
  const files = loadStatic();
  // The pages show no `uri`: the record's responses are built on the public URL, or none.
  const records = stackRecords(app.db, () => opts.publicUrl ?? '');
  app.decorateRequest('uiSession', undefined);
  // Pages for people, not operations of the API: left out of /openapi.json.
  app.addHook('onRoute', (route) => {
    route.schema = { ...(route.schema ?? {}), hide: true };
  });

  // Forms post `application/x-www-form-urlencoded`; small ones only (a key, a token).
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 4096 }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  app.addHook('onSend', async (_req, reply, payload) => {
    reply.headers(SECURITY_HEADERS);
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    return payload;
  });

  // A page's error is a page, not JSON; a 5xx says no more than the API's would.
  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    const status = err instanceof ApiError ? err.status : err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status >= 500) req.log.error({ err }, 'status page error');
    if (err instanceof ApiError) reply.headers(err.headers);
    const msg = status >= 500 ? `Something went wrong (operation ${req.id}).` : err.message;
    void reply.code(status).type('text/html; charset=utf-8').send(
      isFragment(req) ? html`<p class="notice notice-error">${msg}</p>` : page({ title: 'Error', section: 'none', session: req.uiSession ?? undefined, body: html`<h1>Error ${status}</h1>!${notice(msg, 'error')}` }),
    );
  });
  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).type('text/html; charset=utf-8').send(page({ title: 'Not found', section: 'none', session: req.uiSession ?? undefined, body: html`<h1>Not found</h1><p>No page here. <a href="/ui/">Back to the stacks</a>.</p>` }));
  });

  const cookieOf = (req: FastifyRequest) => parseCookie(req.headers.cookie ?? '')[COOKIE];
  const failures = opts.authFailures;
  /**
   * The live session of the request's cookie, or null. A cookie naming none counts against the
   * client's address, as an unknown API key does; an address past its limit is refused (429)
   * before the look-up, unless the session was looked up in the last seconds.
   */
  const sessionOf = async (req: FastifyRequest): Promise<UiSession | null> => {
    const token = cookieOf(req);
    if (!token) return null;
    if (failures && !sessions.cached(token)) {
      const refused = failures.refusal(req.ip);
      if (refused) throw refused;
    }
    const session = await sessions.resolve(token);
    if (!session) failures?.failed(req.ip);
    return session;
  };
  const setCookie = (reply: FastifyReply, value: string, maxAgeS: number) =>
    reply.header('set-cookie', serializeCookie(COOKIE, value, { httpOnly: true, secure: opts.tls, sameSite: 'strict', path: '/ui', maxAge: maxAgeS }));

  /** A form's request: from this page (Origin, when the browser sends one, is this service), with the session's token. */
  const checkForm = (req: FastifyRequest, session: UiSession | null) => {
    const origin = req.headers.origin;
    if (origin !== undefined && hostOf(origin) !== req.headers.host) throw new ApiError('ERR_FORBIDDEN', 'a form of another site was refused');
    if (session && !csrfMatches(session, (req.body as Record<string, unknown> | undefined)?.csrf)) throw new ApiError('ERR_FORBIDDEN', 'the form has expired: reload the page and try again');
  };

  /** The signed-in session, or the way to sign in: a redirect for a page, 401 for a part the script fetches. */
  const signedIn = async (req: FastifyRequest, reply: FastifyReply): Promise<UiSession | null> => {
    const session = await sessionOf(req);
    req.uiSession = session;
    if (session) return session;
    if (isFragment(req) || req.method !== 'GET') void reply.code(401).type('text/html; charset=utf-8').send(html`<p class="notice notice-error">Signed out.</p>`);
    else void reply.redirect(`/ui/login?next=${encodeURIComponent(req.url)}`, 303);
    return null;
  };

  const caller = (req: FastifyRequest, s: UiSession) => ({ accountId: s.accountId, baseUrl: opts.publicUrl ?? `${req.protocol}://${req.headers.host ?? 'localhost'}` });

  const show = (reply: FastifyReply, req: FastifyRequest, title: string, section: Section, body: string) =>
    reply.type('text/html; charset=utf-8').send(isFragment(req) ? body : page({ title, section, session: req.uiSession ?? undefined, body }));

  app.get<{ Params: { file: string } }>('/static/:file', (req, reply) => {
    const f = files.get(req.params.file);
    if (!f) return reply.code(404).type('text/plain').send('not found');
    reply.header('etag', f.etag).header('cache-control', 'public, max-age=300, must-revalidate');
    if (req.headers['if-none-match'] === f.etag) return reply.code(304).send();
    return reply.type(f.type).send(f.body);
  });

  app.get<{ Querystring: { next?: string } }>('/login', async (req, reply) => {
    if (await sessionOf(req)) return reply.redirect(safeNext(one(req.query.next)), 303);
    return reply.type('text/html; charset=utf-8').send(loginPage(safeNext(one(req.query.next))));
  });

  app.post<{ Body: { api_key?: string; next?: string } }>('/login', async (req, reply) => {
    checkForm(req, null);
    const key = typeof req.body?.api_key === 'string' ? req.body.api_key.trim() : '';
    if (key && failures) {
      const refused = failures.refusal(req.ip);
      if (refused) throw refused;
    }
    const opened = key ? await sessions.open(key) : null;
    if (key && !opened) failures?.failed(req.ip);
    if (!opened) return reply.code(401).type('text/html; charset=utf-8').send(loginPage(safeNext(req.body?.next), 'That API key is not valid (unknown or revoked).'));
    setCookie(reply, opened.token, Math.floor(SESSION_TTL_MS / 1000));
    return reply.redirect(safeNext(req.body?.next), 303);
  });

  app.post<{ Body: { csrf?: string } }>('/logout', async (req, reply) => {
    const session = await sessionOf(req);
    checkForm(req, session);
    await sessions.close(cookieOf(req));
    setCookie(reply, '', 0);
    return reply.redirect('/ui/login', 303);
  });

  app.get<{ Querystring: { after?: string } }>('/', async (req, reply) => {
    const s = await signedIn(req, reply);
    if (!s) return reply;
    return show(reply, req, 'Stacks', 'stacks', await stacksSection(records, s.accountId, one(req.query.after)));
  });

  app.get<{ Params: { name: string }; Querystring: { before?: string } }>('/stacks/:name', async (req, reply) => {
    const s = await signedIn(req, reply);
    if (!s) return reply;
    return show(reply, req, `Stack ${req.params.name}`, 'stacks', await stackSection(records, app.db, s, req.params.name, one(req.query.before)));
  });

  app.get<{ Params: { id: string } }>('/runs/:id', async (req, reply) => {
    const s = await signedIn(req, reply);
    if (!s) return reply;
    return show(reply, req, `Run ${req.params.id}`, 'stacks', await runSection(records, s.accountId, req.params.id));
  });

  app.post<{ Params: { name: string }; Body: { csrf?: string } }>('/stacks/:name/sync', async (req, reply) => {
    const s = await signedIn(req, reply);
    if (!s) return reply;
    checkForm(req, s);
    // The one write of the page: as POST /stacks/{stack}/sync, it needs a write key.
    if (!scopeCovers(s.scope, 'write')) throw new ApiError('ERR_FORBIDDEN_SCOPE', `this API key has scope ${s.scope}; Sync now needs write: sign in with a write key`, { scope: s.scope, needs: 'write' });
    if (s.stacks && !s.stacks.includes(req.params.name)) throw new ApiError('ERR_FORBIDDEN_SCOPE', stackRefusalMessage(s.stacks, `Sync now of stack ${req.params.name.slice(0, 64)} needs a key of that stack`), { stacks: s.stacks.join(','), needs: `stack ${req.params.name.slice(0, 64)}` });
    await records.requestSync(s.accountId, req.params.name, `ui (key ${s.keyId})`);
    return reply.redirect(`/ui/stacks/${encodeURIComponent(req.params.name)}?requested=1`, 303);
  });

  // The parts the page's script refreshes in place.
  app.get<{ Querystring: { after?: string } }>('/parts/stacks', async (req, reply) => {
    const s = await signedIn(req, reply);
    if (!s) return reply;
    const { items } = await records.stacks(s.accountId, { after: one(req.query.after), limit: STACKS_PAGE_SIZE });
    return reply.type('text/html; charset=utf-8').send(stacksTable(items));
  });
  app.get<{ Params: { name: string } }>('/parts/stacks/:name', async (req, reply) => {
    const s = await signedIn(req, reply);
    if (!s) return reply;
    const stack = await records.stack(s.accountId, req.params.name);
    return reply.type('text/html; charset=utf-8').send(stack ? stackFacts(stack) : html`<p class="muted">This stack has no record yet.</p>`);
  });
  app.get<{ Params: { name: string } }>('/parts/stacks/:name/runs', async (req, reply) => {
    const s = await signedIn(req, reply);
    if (!s) return reply;
    const { items } = await records.runs(s.accountId, req.params.name, { limit: RUNS_PAGE_SIZE });
    return reply.type('text/html; charset=utf-8').send(runsTable(items));
  });

  app.get<{ Querystring: { kind?: string; before?: string } }>('/objects', async (req, reply) => {
    const s = await signedIn(req, reply);
    if (!s) return reply;
    const kind = OBJECT_TABS.find((t) => t.kind === one(req.query.kind))?.kind ?? OBJECT_TABS[0].kind;
    return show(reply, req, 'Objects', 'objects', await objectsSection(resources, caller(req, s), kind, one(req.query.before)));
  });
}

/** A query parameter given once, as text; anything else (absent, repeated) is none. */
function one(v: unknown): string | undefined {
  return typeof v === 'string' && v.length <= 200 ? v : undefined;
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined; // `null` (a sandboxed frame, a file) or no URL at all
  }
}

function isFragment(req: FastifyRequest): boolean {
  return req.headers['x-edgeplane-fragment'] === '1';
}

/** Where to go after signing in: a path of this page only (never another site). */
function safeNext(next: unknown): string {
  return typeof next === 'string' && /^\/ui\/[^/\\]?/.test(next) && !next.startsWith('//') && !/[\\\s]/.test(next) ? next : '/ui/';
}

function loginPage(next: string, error?: string): string {
  return page({
    title: 'Sign in',
    section: 'none',
    body: html`<div class="login">
      <h1>Sign in</h1>
      <p>Give an API key of your account. It is used once to open a session in this browser and is not kept here; the session ends when you sign out, after 12 hours, or when the key is revoked.</p>
      !${error ? notice(error, 'error') : ''}
      <form method="post" action="/ui/login">
        <input type="hidden" name="next" value="${next}">
        <p><label for="api_key">API key</label><input id="api_key" name="api_key" type="password" autocomplete="current-password" required spellcheck="false" autofocus></p>
        <p><button class="primary" type="submit">Sign in</button></p>
      </form>
    </div>`,
  });
}
