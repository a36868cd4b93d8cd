import { MAX_TIMER_MS } from '../util/time.js';
import { CliExit, EXIT } from './exit.js';

/**
 * The longest duration a flag takes: what Node's timers hold (a longer one fires at once: a
 * `--timeout` of 3,000,000 s timed every request out immediately).
 */
export const MAX_DURATION_MS = MAX_TIMER_MS;

/** `90s`, `2m`, `1h`, `500ms` or plain seconds (`30`, `0.5`) → milliseconds; `what` names the flag in the error. */
export function parseDuration(value: string, what: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/i.exec(value);
  if (!m) throw new CliExit(EXIT.error, `${what} must be a duration such as 90s, 2m or a number of seconds, not ${JSON.stringify(value)}`);
  const n = Number(m[1]);
  const unit = (m[2] ?? 's').toLowerCase();
  return withinTimers(Math.round(n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h']), what, value);
}

/** `ms`, refused when a timer cannot wait that long (`MAX_DURATION_MS`). */
export function withinTimers(ms: number, what: string, given: string): number {
  if (ms > MAX_DURATION_MS) throw new CliExit(EXIT.error, `${what} may be at most 24 days (${Math.floor(MAX_DURATION_MS / 1000)} s), not ${given}`);
  return ms;
}
