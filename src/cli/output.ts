/** The CLI's only way to print: commands get one, tests can capture it. */
export interface Output {
  line(text: string): void;
  json(value: unknown): void;
  error(text: string): void;
}

export const stdio: Output = {
  line: (text) => process.stdout.write(text + '\n'),
  json: (value) => process.stdout.write(JSON.stringify(value) + '\n'),
  error: (text) => process.stderr.write(text + '\n'),
};
