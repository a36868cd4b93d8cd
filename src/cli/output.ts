/** The CLI's only way to print: commands get one, tests can capture it. */
export interface Output {
  line(text: string): void;
  json(value: unknown): void;
  error(text: string): void;
  /**
   * A remark for a person reading along (a directory made, a file saved, an empty database used):
   * on stderr, and left out with `--quiet`. Absent: `error`.
   */
  info?(text: string): void;
  /** Raw text without a newline (live progress lines); absent: progress falls back to `line`. */
  write?(text: string): void;
  /** Whether stdout is a terminal a live line can be redrawn on. */
  isTTY?: boolean;
  columns?: number;
}

/**
 * The switches every command shares, set once from the global options before the command runs
 * (`--quiet`, `--no-color`): commands and the helpers they call read them here, so a command
 * added to the table gets them without a flag of its own.
 */
export const cliSettings: { quiet: boolean; color?: boolean } = { quiet: false };

/**
 * Colour on stdout: `--no-color` or NO_COLOR (https://no-color.org; any non-empty value) turn it
 * off; FORCE_COLOR turns it on for a pipe (a CI log that renders ANSI), except FORCE_COLOR=0,
 * which turns it off; otherwise only on a terminal. `--no-color` wins over everything, then
 * NO_COLOR over FORCE_COLOR.
 */
export function useColor(env: NodeJS.ProcessEnv = process.env, isTTY = !!process.stdout.isTTY): boolean {
  if (cliSettings.color === false) return false;
  if (env.NO_COLOR) return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force !== 'false';
  return isTTY && env.TERM !== 'dumb';
}

/** Says `text` as a remark (`Output.info`), for outputs that have no `info` of their own. */
export function info(out: Output, text: string): void {
  if (out.info) out.info(text);
  else if (!cliSettings.quiet) out.error(text);
}

export const stdio: Output = {
  line: (text) => process.stdout.write(text + '\n'),
  json: (value) => process.stdout.write(JSON.stringify(value) + '\n'),
  error: (text) => process.stderr.write(text + '\n'),
  info: (text) => { if (!cliSettings.quiet) process.stderr.write(text + '\n'); },
  write: (text) => process.stdout.write(text),
  get isTTY() { return !!process.stdout.isTTY; },
  get columns() { return process.stdout.columns; },
};

/**
 * Makes the state directory of a command that writes, saying so when it is new (`ensureStateDir`),
 * or when this process made it as it started (`claimStateDir`).
 */
export async function stateDirFor(dir: string, out: Output = stdio): Promise<void> {
  const [{ ensureStateDir }, { displayDir }, { claimMade }] = await Promise.all([import('../embedded/state-dir.js'), import('../util/display-path.js'), import('../embedded/spare.js')]);
  if (ensureStateDir(dir) || claimMade(dir)) info(out, `created the embedded state directory ${displayDir(dir)} (its .gitignore keeps the database out of Git)`);
}
