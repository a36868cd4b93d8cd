import { CliExit, EXIT } from './exit.js';

/** `90s`, `2m`, `1h`, `500ms` or plain seconds (`30`, `0.5`) → milliseconds; `what` names the flag in the error. */
export function parseDuration(value: string, what: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/i.exec(value);
  if (!m) throw new CliExit(EXIT.error, `${what} must be a duration such as 90s, 2m or a number of seconds, not ${JSON.stringify(value)}`);
  const n = Number(m[1]);
  const unit = (m[2] ?? 's').toLowerCase();
  return Math.round(n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h']);
}
