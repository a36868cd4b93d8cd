import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportState } from '../../reconciler/export/export.js';
import { CONFIG_FILES } from '../../reconciler/manifests/load.js';
import { resolveStack } from '../../reconciler/manifests/config.js';
import { readLiveState } from '../../reconciler/state/read-state.js';
import type { Output } from '../output.js';
import { reconcilerConfig } from '../service-config.js';
import { openTarget, type TargetFlags } from '../target.js';

export interface ExportFlags extends TargetFlags { out?: string; stack?: string; all?: boolean }

/** `export [--out DIR]`: one file per kind in DIR (with an edgeplane.yaml naming the stack), or all documents on stdout. */
export async function exportCmd(out: Output, flags: ExportFlags): Promise<void> {
  const { stack } = resolveStack(flags.out && existsSync(flags.out) ? flags.out : '.', flags.stack);
  const client = await openTarget(flags);
  let result;
  try {
    result = exportState(await readLiveState(client), { stack, all: flags.all, config: reconcilerConfig() });
  } finally {
    await client.close();
  }
  for (const w of result.warnings) out.error(`warning: ${w}`);
  if (flags.out) {
    mkdirSync(flags.out, { recursive: true });
    for (const f of result.files) writeFileSync(join(flags.out, f.name), f.text);
    if (!CONFIG_FILES.some((c) => existsSync(join(flags.out!, c)))) writeFileSync(join(flags.out, 'edgeplane.yaml'), `stack: ${stack}\n`);
    const n = result.files.reduce((a, f) => a + f.objects, 0);
    out.error(`exported ${n} object${n === 1 ? '' : 's'} of stack "${stack}"${flags.all ? ' and unmanaged objects' : ''} to ${flags.out}: ${result.files.map((f) => f.name).join(', ') || '(nothing)'}`);
  } else {
    out.line(result.files.map((f) => f.text).join('---\n').replace(/\n$/, ''));
  }
  if (result.secrets.length) {
    out.error('these secrets are read from the environment (set them before plan / apply):');
    for (const s of result.secrets) out.error(`  ${s.env}  (${s.identity} ${s.path})`);
  }
}
