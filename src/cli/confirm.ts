import { createInterface } from 'node:readline/promises';

/** Asks on a terminal; only "yes" (or "y") goes ahead, like Terraform. */
export async function confirm(question: string, input: NodeJS.ReadableStream = process.stdin, output: NodeJS.WritableStream = process.stderr): Promise<boolean> {
  const rl = createInterface({ input, output, terminal: false });
  try {
    const answer = await rl.question(question);
    return /^(y|yes)$/i.test(answer.trim());
  } catch {
    return false;
  } finally {
    rl.close();
  }
}

export function canPrompt(): boolean {
  return !!process.stdin.isTTY && !!process.stderr.isTTY;
}
