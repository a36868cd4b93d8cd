import { createInterface } from 'node:readline';

/**
 * Asks on a terminal; only "yes" goes ahead (spaces around it aside), as the prompt says and as in
 * Terraform: a stray "y" typed ahead of time does not apply a plan. End of input (Ctrl-D)
 * is a "no": readline's promise API would wait forever on a closed stream.
 */
export function confirm(question: string, input: NodeJS.ReadableStream = process.stdin, output: NodeJS.WritableStream = process.stderr): Promise<boolean> {
  const rl = createInterface({ input, output, terminal: false });
  return new Promise((resolve) => {
    let answered = false;
    rl.on('close', () => { if (!answered) resolve(false); });
    rl.question(question, (answer) => {
      answered = true;
      rl.close();
      resolve(answer.trim() === 'yes');
    });
  });
}

export function canPrompt(): boolean {
  return !!process.stdin.isTTY && !!process.stderr.isTTY;
}
