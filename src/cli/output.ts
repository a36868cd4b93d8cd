/** The CLI's only way to print: commands get one, tests can capture it. */
export interface Output {
  line(text: string): void;
  json(value: unknown): void;
  error(text: string): void;
  /** Raw text without a newline (live progress lines); absent: progress falls back to `line`. */
  write?(text: string): void;
  /** Whether stdout is a terminal a live line can be redrawn on. */
  isTTY?: boolean;
  columns?: number;
}

export const stdio: Output = {
  line: (text) => process.stdout.write(text + '\n'),
  json: (value) => process.stdout.write(JSON.stringify(value) + '\n'),
  error: (text) => process.stderr.write(text + '\n'),
  write: (text) => process.stdout.write(text),
  get isTTY() { return !!process.stdout.isTTY; },
  get columns() { return process.stdout.columns; },
};
