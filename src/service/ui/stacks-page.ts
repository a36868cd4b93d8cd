import { html } from 'ghtml';
import { findKind } from '../../kinds/registry.js';
import type { Queryable } from '../../store/db.js';
import { objectsNamingStack } from '../../store/objects.js';
import { badge, duration, nextLink, notice, when, type BadgeTone } from './layout.js';
import { ownerOf } from './objects-page.js';
import { planHtml } from './plan-html.js';
import type { RunView, StackRecords, StackView } from './records.js';
import type { UiSession } from './sessions.js';

const REFRESH_S = 3;
export const RUNS_PAGE_SIZE = 25;

const STATUS: Record<StackView['status'], [string, BadgeTone]> = {
  synced: ['Synced', 'ok'],
  out_of_sync: ['Out of sync', 'warn'],
  failed: ['Failed', 'bad'],
  unknown: ['Never synced', 'muted'],
};

const OUTCOME: Record<string, BadgeTone> = { applied: 'ok', no_changes: 'ok', drifted: 'warn', failed: 'bad', blocked: 'bad' };

/** The badges of a stack: its sync status, and `Locked` while someone holds its lock. */
export function stackBadges(s: StackView): string {
  const [label, tone] = s.status === 'unknown' && s.last_run ? ['Unknown', 'muted' as BadgeTone] : STATUS[s.status];
  return badge(label, tone) + (s.lock ? ' ' + badge('Locked', 'info') : '');
}

function commit(c: { sha: string; subject?: string | null } | null): string {
  return c ? html`<code title="${c.sha}">${c.sha.slice(0, 8)}</code> ${c.subject ?? ''}` : html`<span class="muted">none</span>`;
}

function stackRow(s: StackView): string {
  return html`<tr data-stack="${s.stack}">
    <th scope="row"><a href="/ui/stacks/${encodeURIComponent(s.stack)}">${s.stack}</a></th>
    <td class="status">!${stackBadges(s)}</td>
    <td>!${commit(s.live_commit)}</td>
    <td>!${when(s.last_run?.finished_at)}</td>
    <td class="align-right">${s.drift_count ?? ''}</td>
    <td>${s.lock?.holder ?? ''}</td>
  </tr>`;
}

/** The stacks page's table: refreshed in place by the page's script. */
export function stacksTable(stacks: StackView[]): string {
  if (stacks.length === 0) return html`<p class="muted">No stacks yet: a stack appears here after its first apply or sync.</p>`;
  return html`<div class="scroll"><table>
    <caption class="sr-only">Stacks of this account</caption>
    <thead><tr><th scope="col">stack</th><th scope="col">status</th><th scope="col">live commit</th><th scope="col">last sync</th><th scope="col" class="align-right">drifted</th><th scope="col">lock holder</th></tr></thead>
    <tbody>!${stacks.map(stackRow).join('')}</tbody>
  </table></div>`;
}

export const STACKS_PAGE_SIZE = 100;

export async function stacksSection(records: StackRecords, accountId: string, after: string | undefined): Promise<string> {
  const { items, more } = await records.stacks(accountId, { after, limit: STACKS_PAGE_SIZE });
  const next = more && items.length ? `/ui/?after=${encodeURIComponent(items.at(-1)!.stack)}` : undefined;
  const part = `/ui/parts/stacks${after ? `?after=${encodeURIComponent(after)}` : ''}`;
  return html`<h1>Stacks</h1>
    <div id="stacks" data-refresh="${part}" data-interval="${REFRESH_S}">!${stacksTable(items)}</div>!${nextLink(next)}`;
}

function counts(c: RunView['counts']): string {
  const parts = Object.entries(c).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`);
  return parts.length ? parts.join(', ') : '—';
}

function runRow(r: RunView): string {
  const ms = r.duration_ms;
  return html`<tr>
    <td><a href="/ui/runs/${encodeURIComponent(r.id)}">!${when(r.started_at)}</a></td>
    <td>!${badge(r.outcome.replace('_', ' '), OUTCOME[r.outcome] ?? 'muted')}</td>
    <td>${r.trigger}</td>
    <td>!${commit(r.commit)}</td>
    <td>${r.holder}</td>
    <td>${counts(r.counts)}</td>
    <td>${duration(ms)}</td>
  </tr>`;
}

export function runsTable(runs: RunView[]): string {
  if (runs.length === 0) return html`<p class="muted">No runs yet.</p>`;
  return html`<div class="scroll"><table>
    <caption class="sr-only">Runs, newest first</caption>
    <thead><tr><th scope="col">started</th><th scope="col">outcome</th><th scope="col">trigger</th><th scope="col">commit</th><th scope="col">who</th><th scope="col">changes</th><th scope="col">took</th></tr></thead>
    <tbody>!${runs.map(runRow).join('')}</tbody>
  </table></div>`;
}

/** A stack's header, runs and the objects it owns (as the API answers them), drifted ones marked. */
export async function stackSection(
  records: StackRecords, db: Queryable, session: UiSession, name: string, before: string | undefined,
): Promise<string> {
  const s = await records.stack(session.accountId, name);
  const { items, more } = await records.runs(session.accountId, name, { before, limit: RUNS_PAGE_SIZE });
  const owned = await ownedObjects(db, session.accountId, name);
  // While the stack is out of sync, its last run (a drift check) names the drifted objects and fields.
  const driftRun = s?.status === 'out_of_sync' && s.last_run ? await records.run(session.accountId, s.last_run.id) : null;
  // An object's steps (its update, its modules) as one: their fields, drift if any of them is.
  const drifted = new Map<string, { action: string; fields: string[]; drift?: boolean }>();
  for (const o of driftRun?.objects ?? []) {
    const had = drifted.get(o.identity);
    drifted.set(o.identity, had ? { action: had.action, fields: [...new Set([...had.fields, ...o.fields])], drift: had.drift === undefined || o.drift === undefined ? undefined : had.drift || o.drift } : o);
  }
  const next = more && items.length ? `/ui/stacks/${encodeURIComponent(name)}?before=${encodeURIComponent(items.at(-1)!.id)}` : undefined;
  return html`<h1>Stack ${name}</h1>
    <div id="stack-head" data-refresh="/ui/parts/stacks/${encodeURIComponent(name)}" data-interval="${REFRESH_S}" aria-live="polite">!${s ? stackFacts(s) : html`<p class="muted">This stack has no record yet.</p>`}</div>
    !${session.scope === 'read'
      ? html`<p class="muted row-actions">Signed in with a read key: Sync now needs a key of scope write.</p>`
      : html`<form method="post" action="/ui/stacks/${encodeURIComponent(name)}/sync" class="row-actions">
      <input type="hidden" name="csrf" value="${session.csrf}">
      <button class="primary" type="submit">Sync now</button>
      <span class="muted">asks the sync agents for an immediate sync (as <code>edgeplane sync ${name}</code> does)</span>
    </form>`}
    <h2>Runs</h2>
    <div id="runs" !${before ? '' : html`data-refresh="/ui/parts/stacks/${encodeURIComponent(name)}/runs" data-interval="${REFRESH_S}"`}>!${runsTable(items)}</div>
    !${nextLink(next)}
    <h2>Objects the stack owns</h2>
    !${ownedTable(owned, drifted)}`;
}

export function stackFacts(s: StackView): string {
  return html`<dl class="facts">
    <dt>status</dt><dd class="status">!${stackBadges(s)}</dd>
    <dt>live commit</dt><dd>!${commit(s.live_commit)}</dd>
    <dt>last sync</dt><dd>!${when(s.last_run?.finished_at)} !${s.last_run ? html`(<a href="/ui/runs/${encodeURIComponent(s.last_run.id)}">${s.last_run.outcome.replace('_', ' ')}</a>)` : ''}</dd>
    <dt>drifted objects</dt><dd>${s.drift_count ?? 'not known'}</dd>
    <dt>lock</dt><dd>!${s.lock ? html`held by ${s.lock.holder} until !${when(s.lock.expires_at)}` : html`<span class="muted">free</span>`}</dd>
  </dl>`;
}

interface Owned { kind: string; id: string; identity: string }

/** The most objects the stack page lists. */
const OWNED_LIMIT = 2000;

/** The objects that carry the stack's ownership marker (confirmed by parsing it), by kind. */
async function ownedObjects(db: Queryable, accountId: string, stack: string): Promise<{ items: Owned[]; truncated: boolean }> {
  const rows = await objectsNamingStack(db, accountId, stack, OWNED_LIMIT + 1);
  const items: Owned[] = [];
  for (const r of rows.slice(0, OWNED_LIMIT)) {
    const o = ownerOf(r.metadata);
    if (o?.stack === stack) items.push({ kind: findKind(r.kind)?.manifestKind ?? r.kind, id: r.id, identity: o.id });
  }
  return { items, truncated: rows.length > OWNED_LIMIT };
}

function ownedTable(owned: { items: Owned[]; truncated: boolean }, drifted: Map<string, { action: string; fields: string[]; drift?: boolean }>): string {
  if (owned.items.length === 0) return html`<p class="muted">No object carries this stack's ownership marker.</p>`;
  const rows = owned.items
    .sort((a, b) => a.kind.localeCompare(b.kind) || a.identity.localeCompare(b.identity))
    .map((o) => {
      const d = drifted.get(o.identity);
      // Drifted as the plan marks it (the live object moved); a change of the manifests the run
      // did not make is "Not applied". Runs recorded before plans marked drift say Drifted.
      const drift = d ? badge(d.drift === false ? 'Not applied' : 'Drifted', 'warn') + ' ' + (d.fields.length ? d.fields.map((f) => html`<code>${f}</code>`).join(', ') : html`${d.action}`) : '';
      return html`<tr><td>${o.kind}</td><td><code>${o.identity}</code></td><td><code class="id">${o.id}</code></td><td class="drift">!${drift}</td></tr>`;
    });
  return html`<div class="scroll"><table>
    <caption class="sr-only">Objects owned by the stack</caption>
    <thead><tr><th scope="col">kind</th><th scope="col">identity</th><th scope="col">id</th><th scope="col">drift</th></tr></thead>
    <tbody>!${rows.join('')}</tbody></table></div>
    !${owned.truncated ? notice(`Only the first ${OWNED_LIMIT} objects are listed.`) : ''}`;
}

/** A run: its facts and its plan, rendered from the stored Markdown. */
export async function runSection(records: StackRecords, accountId: string, id: string): Promise<string> {
  const r = await records.run(accountId, id);
  if (!r) return html`<h1>Run not found</h1><p>No run ${id} in this account. <a href="/ui/">Back to the stacks</a>.</p>`;
  const ms = r.duration_ms;
  return html`<h1>Run of <a href="/ui/stacks/${encodeURIComponent(r.stack)}">${r.stack}</a></h1>
    <dl class="facts">
      <dt>outcome</dt><dd>!${badge(r.outcome.replace('_', ' '), OUTCOME[r.outcome] ?? 'muted')}</dd>
      <dt>trigger</dt><dd>${r.trigger}</dd>
      <dt>commit</dt><dd>!${commit(r.commit)} !${r.commit?.author ? html`by ${r.commit.author}` : ''}</dd>
      <dt>who</dt><dd>${r.holder}</dd>
      <dt>started</dt><dd>!${when(r.started_at)}</dd>
      <dt>took</dt><dd>${duration(ms)}</dd>
      <dt>changes</dt><dd>${counts(r.counts)}</dd>
      !${r.policy ? html`<dt>policies</dt><dd>${r.policy.denied} denied, ${r.policy.warned} warned</dd>` : ''}
      !${(r.policy?.overrides ?? []).map((o) => html`<dt>overridden</dt><dd><code>${o.policy}</code>: ${o.reason}</dd>`).join('')}
    </dl>
    !${r.error ? notice(r.error, 'error') : ''}
    <h2>Plan</h2>
    !${'plan_markdown' in r && r.plan_markdown ? html`<div class="plan">!${planHtml(r.plan_markdown)}</div>` : html`<p class="muted">No plan was recorded for this run.</p>`}`;
}
