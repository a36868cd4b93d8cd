import { describe, expect, it } from 'vitest';
import { MAX_DURATION_MS, parseDuration } from '../../src/cli/duration.js';

describe('duration flags', () => {
  it('read units and plain seconds', () => {
    expect([parseDuration('90s', 'x'), parseDuration('2m', 'x'), parseDuration('1h', 'x'), parseDuration('500ms', 'x'), parseDuration('0.5', 'x')]).toEqual([90_000, 120_000, 3_600_000, 500, 500]);
  });

  it('refuse what a timer cannot wait for (it would fire at once), naming the flag', () => {
    expect(parseDuration(`${MAX_DURATION_MS}ms`, '--timeout')).toBe(MAX_DURATION_MS);
    expect(() => parseDuration('3000000', '--timeout')).toThrow('--timeout may be at most 24 days (2147483 s), not 3000000');
    expect(() => parseDuration('600h', '--lock-timeout')).toThrow(/--lock-timeout may be at most 24 days/);
    expect(() => parseDuration('soon', '--timeout')).toThrow(/must be a duration such as 90s/);
  });
});
