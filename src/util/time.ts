/** RFC 3339, UTC, second precision: `2026-11-22T01:54:48Z`. */
export function rfc3339(d: Date | string): string {
  const date = typeof d === 'string' ? new Date(d) : d;
  return date.toISOString().slice(0, 19) + 'Z';
}
