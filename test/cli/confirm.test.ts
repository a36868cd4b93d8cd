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
  it('goes ahead only on "yes" (spaces around it aside), as the prompt says', async () => {
    expect(await answer('yes\n')).toEqual({ ok: true, asked: 'Apply? ' });
    expect((await answer('  yes \n')).ok).toBe(true);
    for (const no of ['y\n', 'Y\n', 'YES\n', 'no\n', '\n', 'yess\n', '']) expect((await answer(no)).ok, JSON.stringify(no)).toBe(false);
  });
});
