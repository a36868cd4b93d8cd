import type { Output } from '../../src/cli/output.js';

/** An `Output` that keeps what a command prints. */
export function capture(): Output & { lines: string[]; errors: string[]; text(): string } {
  const lines: string[] = [];
  const errors: string[] = [];
  return {
    lines, errors,
    line: (t) => lines.push(t),
    json: (v) => lines.push(JSON.stringify(v)),
    error: (t) => errors.push(t),
    text: () => lines.join('\n'),
  };
}

/** Runs a command and returns its exit code (CliExit's, or 0). */
export async function exitCode(run: () => Promise<void>): Promise<number> {
  try {
    await run();
    return 0;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'number') return code;
    throw err;
  }
}
