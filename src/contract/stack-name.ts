/** Stack names (`--stack`, `edgeplane.yaml`, the sync record's paths): what a marker's `stack` must be. */
export const STACK_NAME = /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/;

/**
 * The stack named by the reconciler's ownership marker in an object's `metadata`
 * (`{"managed_by": {"tool": "edgeplane", "stack": …}}`), if it holds one: what a stack-limited API
 * key is checked against (docs/api.md, "Scopes").
 */
export function markerStack(metadata: unknown): string | undefined {
  if (typeof metadata !== 'string' || !metadata.startsWith('{')) return undefined;
  try {
    const m = (JSON.parse(metadata) as { managed_by?: { tool?: unknown; stack?: unknown } } | null)?.managed_by;
    return m && m.tool === 'edgeplane' && typeof m.stack === 'string' && STACK_NAME.test(m.stack) ? m.stack : undefined;
  } catch {
    return undefined;
  }
}

/** The refusal of a stack-limited key: `what` is what was asked for (`stack web's lock`, an object's marker). */
export function stackRefusalMessage(stacks: readonly string[], what: string): string {
  return `this API key is limited to stack${stacks.length === 1 ? '' : 's'} ${stacks.join(', ')}; ${what}`;
}
