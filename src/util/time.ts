/** RFC 3339, UTC, second precision: `2026-11-22T01:54:48Z`. */
export function rfc3339(d: Date | string): string {
  const date = typeof d === 'string' ? new Date(d) : d;
  return date.toISOString().slice(0, 19) + 'Z';
}

/** The longest wait Node's timers take (2^31 - 1 ms, 24.8 days): a longer one fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
