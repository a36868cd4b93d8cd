import { withChildren, type ManifestObject } from '../manifests/model.js';
import { namedTarget } from '../manifests/schema.js';
import { isName, refsOf } from '../manifests/object-values.js';
import { mermaidText } from '../render/mermaid.js';
import { checkSelectors, selector, selectsWithin } from '../plan/selectors.js';

export interface GraphNode {
  /** Manifest identity (`HTTPSEdge/web/routes/api`), or the raw id a manifest refers to. */
  id: string;
  /** Manifest kind (`HTTPSEdgeRoute`); for a raw id, the registry name of the kind referred to. */
  kind: string;
  /** A raw id: an object the manifests refer to but do not describe. */
  external?: boolean;
}

export interface GraphEdge {
  from: string;
  to: string;
  /** The field that holds the reference (`mutual_tls.certificate_authority_ids`), or the field holding the child (`routes`). */
  label: string;
}

export interface StackGraph {
  stack: string;
  nodes: GraphNode[];
  edges: GraphEdge[];
  /** `--target`: the selectors the graph was cut down to. */
  targets?: string[];
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const edgeKey = (e: GraphEdge) => `${e.from}\0${e.to}\0${e.label}`;

/**
 * The objects of validated manifests and what points at what: each object to its children (an
 * edge to its routes) and to every object it refers to (a route to its backend, a failover backend
 * to its children, an edge to the CAs of its mutual TLS). Sorted by identity, so the same
 * manifests give the same text however their files are laid out.
 */
export function stackGraph(stack: string, objects: ManifestObject[]): StackGraph {
  const nodes = new Map<string, GraphNode>();
  const edges = new Map<string, GraphEdge>();
  const all = withChildren(objects);
  for (const o of all) nodes.set(o.identity, { id: o.identity, kind: o.kind.manifestKind ?? o.kind.name });
  for (const o of all) {
    if (o.parent) {
      const e = { from: o.parent.identity, to: o.identity, label: o.identity.slice(o.parent.identity.length + 1).split('/')[0] };
      edges.set(edgeKey(e), e);
    }
    for (const r of refsOf(o)) {
      const target = isName(r.def, r.value) ? namedTarget(r.def)! : undefined;
      const to = target ? `${target.manifestKind}/${r.value}` : r.value;
      if (!nodes.has(to)) nodes.set(to, { id: to, kind: target?.manifestKind ?? r.def.kind, external: !target });
      const e = { from: o.identity, to, label: r.path.filter((p) => typeof p === 'string').join('.') };
      edges.set(edgeKey(e), e);
    }
  }
  const sortedEdges = [...edges.values()].sort((a, b) => (edgeKey(a) < edgeKey(b) ? -1 : edgeKey(a) > edgeKey(b) ? 1 : 0));
  return { stack, nodes: [...nodes.values()].sort(byId), edges: sortedEdges };
}

/**
 * The part of the graph `--target` selects, with the selectors `plan --target` takes (selectors.ts):
 * the objects they name and those under them (an edge's routes), and everything those refer to,
 * directly or through others (a route's backend, that backend's children), so no arrow points out
 * of the picture. A selector that names no object of the manifests is an error naming the nearest.
 */
export function scopeGraph(g: StackGraph, targets: readonly string[]): StackGraph {
  const selectors = targets.map(selector);
  checkSelectors(selectors, g.nodes.filter((n) => !n.external).map((n) => n.id));
  const out = new Map<string, GraphEdge[]>();
  for (const e of g.edges) out.set(e.from, [...(out.get(e.from) ?? []), e]);
  const keep = new Set(g.nodes.filter((n) => !n.external && selectsWithin(selectors, n.id)).map((n) => n.id));
  const queue = [...keep];
  for (let i = 0; i < queue.length; i++) {
    for (const e of out.get(queue[i]) ?? []) {
      if (keep.has(e.to)) continue;
      keep.add(e.to);
      queue.push(e.to);
    }
  }
  return { stack: g.stack, nodes: g.nodes.filter((n) => keep.has(n.id)), edges: g.edges.filter((e) => keep.has(e.from) && keep.has(e.to)), targets: selectors.map((s) => s.text) };
}

/**
 * What GitHub (and Mermaid's defaults: `maxTextSize`, `maxEdges`) renders at most: a bigger
 * chart shows as an error box in a README or a comment.
 */
export const MERMAID_LIMITS = { characters: 50_000, arrows: 500 } as const;

/** Why GitHub would not render this Mermaid chart (undefined when it would), and what to do instead. */
export function mermaidTooBig(g: StackGraph, text: string): string | undefined {
  const over = [
    ...(g.edges.length > MERMAID_LIMITS.arrows ? [`${g.edges.length.toLocaleString('en-US')} arrows (GitHub renders at most ${MERMAID_LIMITS.arrows})`] : []),
    ...(text.length > MERMAID_LIMITS.characters ? [`${text.length.toLocaleString('en-US')} characters (at most ${MERMAID_LIMITS.characters.toLocaleString('en-US')})`] : []),
  ];
  if (!over.length) return undefined;
  // A selector to try: the first edge (with its routes and what they use), else the first object.
  const first = g.nodes.find((n) => n.kind === 'HTTPSEdge' && !n.external) ?? g.nodes.find((n) => !n.external);
  const example = first ? ` (--target ${first.id}, or a glob such as '${first.id.split('/')[0]}/${first.id.split('/')[1].slice(0, 3)}*')` : '';
  return `this Mermaid chart has ${over.join(' and ')}: GitHub will not render it. Draw part of the stack with --target${example}, or all of it with --format dot (Graphviz)`;
}

/** A Mermaid flowchart (GitHub renders one in a ```mermaid block): objects left, what they refer to right. */
export function graphMermaid(g: StackGraph): string {
  const index = new Map(g.nodes.map((n, i) => [n.id, `n${i}`]));
  const scope = g.targets?.length ? `, --target ${g.targets.join(' ')}` : '';
  const out = ['flowchart LR', `  %% edgeplane stack ${`${g.stack}${scope}`.replace(/[\r\n]/g, ' ')}`];
  for (const n of g.nodes) out.push(`  ${index.get(n.id)}["${mermaidText(n.external ? `${n.id} (not in the manifests)` : n.id)}"]`);
  for (const e of g.edges) out.push(`  ${index.get(e.from)} -->|"${mermaidText(e.label)}"| ${index.get(e.to)}`);
  const external = g.nodes.filter((n) => n.external).map((n) => index.get(n.id));
  if (external.length) out.push('  classDef external stroke-dasharray: 4 4', `  class ${external.join(',')} external`);
  return out.join('\n') + '\n';
}

/** A DOT string: quoted, its quotes and backslashes escaped. */
function dot(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r?\n/g, '\\n')}"`;
}

/** Graphviz DOT (`dot -Tsvg`): the same graph. */
export function graphDot(g: StackGraph): string {
  const scope = g.targets?.length ? `, --target ${g.targets.join(' ')}` : '';
  const out = [`digraph ${dot(`edgeplane stack ${g.stack}${scope}`)} {`, '  rankdir=LR;', '  node [shape=box];'];
  for (const n of g.nodes) out.push(`  ${dot(n.id)}${n.external ? ` [style=dashed, tooltip=${dot(`${n.kind}, not in the manifests`)}]` : ''};`);
  for (const e of g.edges) out.push(`  ${dot(e.from)} -> ${dot(e.to)} [label=${dot(e.label)}];`);
  out.push('}');
  return out.join('\n') + '\n';
}
