import { html } from 'ghtml';
import type { UiSession } from './sessions.js';

/**
 * The page's frame and small parts. Every value goes through ghtml's `html` tag, which escapes
 * each `${…}` (a description `<img src=x onerror=…>` is shown as that text); only markup this
 * module or its callers built with `html` is put in raw, with `!${…}`.
 */

export type Section = 'stacks' | 'objects' | 'none';

export interface PageFrame {
  title: string;
  section: Section;
  session?: UiSession;
  /** The page's content, already built with `html`. */
  body: string;
}

export function page(f: PageFrame): string {
  const nav = f.session
    ? html`<nav aria-label="Main">
        <a href="/ui/" !${f.section === 'stacks' ? 'aria-current="page"' : ''}>Stacks</a>
        <a href="/ui/objects" !${f.section === 'objects' ? 'aria-current="page"' : ''}>Objects</a>
      </nav>
      <form method="post" action="/ui/logout" class="signout">
        <input type="hidden" name="csrf" value="${f.session.csrf}">
        <span class="account" title="Account">${f.session.accountId}</span>
        <button type="submit">Sign out</button>
      </form>`
    : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${f.title} · edgeplane</title>
<link rel="stylesheet" href="/ui/static/ui.css">
<script type="module" src="/ui/static/ui.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/ui/">edgeplane</a>!${nav}</header>
<main id="main" tabindex="-1">
!${f.body}
</main>
</body>
</html>`;
}

export type BadgeTone = 'ok' | 'warn' | 'bad' | 'info' | 'muted';

export function badge(text: string, tone: BadgeTone): string {
  return html`<span class="badge badge-${tone}">${text}</span>`;
}

/** A time as a `<time>` element: UTC text, machine form in `datetime`. */
export function when(iso: string | null | undefined): string {
  if (!iso) return html`<span class="muted">never</span>`;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return html`${iso}`;
  return html`<time datetime="${d.toISOString()}">${d.toISOString().slice(0, 16).replace('T', ' ')} UTC</time>`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '';
  return ms < 1000 ? `${Math.round(ms)} ms` : ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60_000)} min`;
}

/** A link to the next page of a list, or nothing. */
export function nextLink(href: string | undefined): string {
  return href ? html`<p class="pager"><a href="${href}" rel="next">Next page</a></p>` : '';
}

export function notice(text: string, tone: 'error' | 'info' = 'info'): string {
  return html`<p class="notice notice-${tone}" role="${tone === 'error' ? 'alert' : 'status'}">${text}</p>`;
}
