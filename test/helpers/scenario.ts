import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { findKind, KINDS } from '../../src/kinds/registry.js';
import type { Body } from '../../src/kinds/types.js';
import { encodeMetadata, MARKER_VERSION, TOOL, fingerprintSecret } from '../../src/reconciler/ownership/marker.js';
import type { ObservedLists } from '../../src/reconciler/plan/observed.js';

const CERTS = join(import.meta.dirname, '..', 'fixtures', 'certs');
const BASE = 'https://api.example.test';

/**
 * Observed state as scenario folders write it: API list bodies by list key, with shorthands the
 * harness expands — `$pem: file` (a fixture certificate), `$marker: {id, stack?, protect?,
 * secrets?: {path: value}}` and `$metadata` (the user's part) instead of a hand-made marker string.
 * `uri` and `created_at` are filled in.
 */
export function expandObserved(raw: Record<string, Body[]>, defaultStack: string): ObservedLists {
  const out: ObservedLists = {};
  for (const [listKey, items] of Object.entries(raw)) {
    const kind = KINDS.find((k) => k.listKey === listKey);
    if (!kind) throw new Error(`observed.json: unknown list ${listKey}`);
    out[listKey] = items.map((x) => expandObject(x, kind.path, kind.embeds ?? {}, defaultStack));
  }
  return out;
}

function expandObject(x: Body, path: string, embeds: Record<string, string>, stack: string, parentId?: string): Body {
  const o: Body = { ...x };
  const resolvedPath = parentId ? path.replace(/:[a-z_]+/, parentId) : path;
  const head: Body = { id: o.id, uri: `${BASE}${resolvedPath}/${o.id}`, created_at: '2026-01-01T00:00:00Z' };
  if (typeof o.$pem === 'string') {
    o.ca_pem = readFileSync(join(CERTS, o.$pem), 'utf8');
    delete o.$pem;
  }
  if (o.$marker) {
    const m = o.$marker as { id: string; stack?: string; protect?: boolean; secrets?: Record<string, string> };
    const st = m.stack ?? stack;
    const fp = Object.fromEntries(Object.entries(m.secrets ?? {}).map(([p, v]) => [p, fingerprintSecret(st, m.id, p, v)]));
    o.metadata = encodeMetadata({ tool: TOOL, v: MARKER_VERSION, stack: st, id: m.id, fp, protect: m.protect }, o.$metadata as string | undefined);
  } else if (o.$metadata !== undefined) o.metadata = o.$metadata;
  delete o.$marker;
  delete o.$metadata;
  for (const [field, childKind] of Object.entries(embeds)) {
    const k = findKind(childKind)!;
    o[field] = ((o[field] as Body[] | undefined) ?? []).map((c) => expandObject(c, k.path, k.embeds ?? {}, stack, o.id as string));
  }
  return { ...head, ...o };
}

/** Compares with a golden file; `UPDATE_GOLDEN=1` rewrites it instead. */
export function golden(path: string, actual: string) {
  if (process.env.UPDATE_GOLDEN || !existsSync(path)) {
    writeFileSync(path, actual);
    if (!process.env.UPDATE_GOLDEN) throw new Error(`golden file ${path} was missing: written, check it and re-run`);
    return;
  }
  expect(actual, `golden ${path} (UPDATE_GOLDEN=1 to rewrite)`).toBe(readFileSync(path, 'utf8'));
}
