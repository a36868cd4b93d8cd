import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { confirm } from '../../src/cli/confirm.js';

async function answer(text: string): Promise<{ ok: boolean; asked: string }> {
  const input = new PassThrough();
  const output = new PassThrough();
  let asked = '';
  output.on('data', (d) => (asked += d));
  const p = confirm('Apply? ', input, output);
  input.end(text);
  return { ok: await p, asked };
}

describe('confirmation prompt', () => {
  it('goes ahead only on "yes" (or "y"), whatever the case and spaces', async () => {
    expect(await answer('yes\n')).toEqual({ ok: true, asked: 'Apply? ' });
    expect((await answer('  Y \n')).ok).toBe(true);
    for (const no of ['no\n', '\n', 'yess\n', '']) expect((await answer(no)).ok, JSON.stringify(no)).toBe(false);
  });
});
