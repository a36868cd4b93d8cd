import { X509Certificate } from 'node:crypto';
import { html } from 'ghtml';
import { kindByName } from '../../kinds/registry.js';
import { idPattern } from '../../util/ids.js';
import type { KindDef } from '../../kinds/types.js';
import type { Resources } from '../writes/resources.js';
import { badge, nextLink } from './layout.js';

type Body = Record<string, unknown>;

/** The kinds the objects page lists, in its tab order. */
export const OBJECT_TABS = [
  { kind: 'httpsEdge', label: 'HTTPS edges' },
  { kind: 'certificateAuthority', label: 'Certificate authorities' },
  { kind: 'failoverBackend', label: 'Failover backends' },
] as const;

export const OBJECTS_PAGE_SIZE = 50;

/**
 * The stack and identity an object's `metadata` names as its owner (the reconciler's ownership
 * marker, `{"managed_by": {"tool": "edgeplane", "stack": …, "id": …}}`), or none: unmanaged. Read
 * for display only; what the reconciler accepts as a marker is decided by the reconciler.
 */
export function ownerOf(metadata: unknown): { stack: string; id: string } | undefined {
  if (typeof metadata !== 'string' || !metadata.startsWith('{"managed_by"')) return undefined;
  try {
    const m = (JSON.parse(metadata) as { managed_by?: { tool?: unknown; stack?: unknown; id?: unknown } }).managed_by;
    if (m?.tool === 'edgeplane' && typeof m.stack === 'string' && typeof m.id === 'string') return { stack: m.stack, id: m.id };
  } catch { /* the user's own text */ }
  return undefined;
}

function owner(body: Body): string {
  const o = ownerOf(body.metadata);
  return o
    ? html`<span class="owner">managed by <a href="/ui/stacks/${encodeURIComponent(o.stack)}">${o.stack}</a> as <code>${o.id}</code></span>`
    : badge('Unmanaged', 'muted');
}

/** A module's settings as `key: value` pairs, one level deep (secrets are never in a response). */
function settings(mod: Body): string {
  const parts = Object.entries(mod)
    .filter(([k, v]) => k !== 'enabled' && v !== null && v !== undefined && v !== '')
    .map(([k, v]) => html`<span class="kv"><span class="k">${k}</span> <code>${short(v)}</code></span>`);
  return parts.join(' ');
}

function short(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > 120 ? s.slice(0, 117) + '…' : s;
}

function modules(body: Body, kind: KindDef): string {
  const items = (kind.modules ?? [])
    .filter((m) => body[m.name] !== null && body[m.name] !== undefined)
    .map((m) => {
      const mod = body[m.name] as Body;
      const off = mod.enabled === false ? ' ' + badge('disabled', 'muted') : '';
      return html`<li><span class="module">${m.name}</span>!${off} !${settings(mod)}</li>`;
    });
  return items.length ? html`<ul class="modules">!${items.join('')}</ul>` : '';
}

function edge(body: Body): string {
  const edgeKind = kindByName('httpsEdge');
  const routeKind = kindByName('httpsEdgeRoute');
  const routes = (body.routes as Body[] | undefined) ?? [];
  const hostports = (body.hostports as string[] | undefined) ?? [];
  return html`<li class="tree-node">
    <details open>
      <summary><code class="id">${body.id}</code> ${String(body.description ?? '')} !${owner(body)}</summary>
      <div class="tree-body">
        <p><span class="k">hostports</span> !${hostports.map((h) => html`<code>${h}</code>`).join(', ') || html`<span class="muted">none</span>`}</p>
        !${modules(body, edgeKind)}
        <p class="k">routes (${routes.length})</p>
        <ul class="tree">
          !${routes.map((r) => html`<li class="tree-node">
            <code class="id">${r.id}</code> <span class="match">${String(r.match_type ?? '')} <code>${String(r.match ?? '')}</code></span>
            ${String(r.description ?? '')} !${owner(r)}
            !${modules(r, routeKind)}
          </li>`).join('')}
        </ul>
      </div>
    </details>
  </li>`;
}

function keyType(pem: unknown): string {
  if (typeof pem !== 'string') return '';
  try {
    const key = new X509Certificate(pem).publicKey;
    const d = key.asymmetricKeyDetails;
    return key.asymmetricKeyType === 'rsa' ? `RSA ${d?.modulusLength ?? ''}`.trim() : key.asymmetricKeyType === 'ec' ? `EC ${d?.namedCurve ?? ''}`.trim() : String(key.asymmetricKeyType ?? '');
  } catch {
    return '';
  }
}

function ca(body: Body): string {
  const notAfter = typeof body.not_after === 'string' ? body.not_after : '';
  const expired = notAfter !== '' && new Date(notAfter).getTime() < Date.now();
  return html`<tr>
    <td><code class="id">${body.id}</code></td>
    <td>${String(body.subject_common_name ?? '')}</td>
    <td>${notAfter.slice(0, 10)} !${expired ? badge('Expired', 'bad') : ''}</td>
    <td>${keyType(body.ca_pem)}</td>
    <td>${String(body.description ?? '')}</td>
    <td>!${owner(body)}</td>
  </tr>`;
}

function failover(body: Body): string {
  const members = (body.backends as unknown[] | undefined) ?? [];
  return html`<tr>
    <td><code class="id">${body.id}</code></td>
    <td><ol class="members">!${members.map((m) => html`<li><code>${typeof m === 'string' ? m : JSON.stringify(m)}</code></li>`).join('')}</ol></td>
    <td>${String(body.description ?? '')}</td>
    <td>!${owner(body)}</td>
  </tr>`;
}

/** One tab of the objects page: a page of one kind's objects, as the API answers them. */
export async function objectsSection(resources: Resources, caller: { accountId: string; baseUrl: string }, kindName: string, before: string | undefined): Promise<string> {
  const kind = kindByName(kindName);
  // A `before` that is no id of this kind (typed by hand, cut short) starts at the first page.
  if (before !== undefined && !new RegExp(idPattern(kind.idPrefix)).test(before)) before = undefined;
  const { items, more, lastId } = await resources.list(kind, caller, { beforeId: before, limit: OBJECTS_PAGE_SIZE });
  const next = more && lastId ? `/ui/objects?kind=${encodeURIComponent(kindName)}&before=${encodeURIComponent(lastId)}` : undefined;
  const tabs = html`<nav class="tabs" aria-label="Kinds">!${OBJECT_TABS.map((t) => html`<a href="/ui/objects?kind=${t.kind}" !${t.kind === kindName ? 'aria-current="page"' : ''}>${t.label}</a>`).join('')}</nav>`;
  let list: string;
  if (items.length === 0) list = html`<p class="muted">No ${kind.title}s${before ? ' after this page' : ''}.</p>`;
  else if (kindName === 'httpsEdge') list = html`<ul class="tree" aria-label="Edges">!${items.map(edge).join('')}</ul>`;
  else if (kindName === 'certificateAuthority') {
    list = html`<div class="scroll"><table><caption class="sr-only">Certificate authorities</caption>
      <thead><tr><th scope="col">id</th><th scope="col">subject</th><th scope="col">expires</th><th scope="col">key</th><th scope="col">description</th><th scope="col">owner</th></tr></thead>
      <tbody>!${items.map(ca).join('')}</tbody></table></div>`;
  } else {
    list = html`<div class="scroll"><table><caption class="sr-only">Failover backends</caption>
      <thead><tr><th scope="col">id</th><th scope="col">members, in order</th><th scope="col">description</th><th scope="col">owner</th></tr></thead>
      <tbody>!${items.map(failover).join('')}</tbody></table></div>`;
  }
  return html`<h1>Objects</h1>!${tabs}<section aria-label="${kind.title}s">!${list}</section>!${nextLink(next)}`;
}
