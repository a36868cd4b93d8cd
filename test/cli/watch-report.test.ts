import { describe, expect, it } from 'vitest';
import { reporter } from '../../src/cli/commands/watch.js';
import type { Output } from '../../src/cli/output.js';

function capture(): { out: Output; lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: { line: (t) => lines.push(t), error: (t) => errors.push(t), json: (v) => lines.push(JSON.stringify(v)) } };
}

describe('edgeplane watch: what a run prints', () => {
  it('an invalid run with no problem list says why (a file gone between listing and reading)', () => {
    const c = capture();
    const report = reporter(c.out, false);
    report({ type: 'run-end', runId: 'run-3', status: 'invalid', ms: 4, error: "ENOENT: no such file or directory, open 'edges.yaml'" });
    expect(c.errors).toEqual(["[run-3] ENOENT: no such file or directory, open 'edges.yaml'"]);
    expect(c.lines).toEqual(['[run-3] invalid in 4 ms']);
  });

  it('a run that ended well prints one line; a failed one its error, to be retried', () => {
    const c = capture();
    const report = reporter(c.out, false);
    report({ type: 'run-end', runId: 'run-1', status: 'ok', ms: 12 });
    report({ type: 'run-end', runId: 'run-2', status: 'retry', ms: 30, error: 'HTTP 503' });
    expect(c.lines).toEqual(['[run-1] ok in 12 ms']);
    expect(c.errors).toEqual(['[run-2] failed: HTTP 503']);
  });
});
