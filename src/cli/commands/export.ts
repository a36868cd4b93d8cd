import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { exportState } from '../../reconciler/export/export.js';
import { CONFIG_FILES, manifestFiles } from '../../reconciler/manifests/load.js';
import { resolveStack, stackLine } from '../../reconciler/manifests/config.js';
import { readLiveState } from '../../reconciler/state/read-state.js';
import { CliExit, EXIT } from '../exit.js';
import { info, type Output } from '../output.js';
import { displayPath } from '../../util/display-path.js';
import { MANIFEST_SCHEMA_FILE, schemaModeline, STACK_FILE_SCHEMA_FILE } from '../../reconciler/manifests/schema-file.js';
import { reconcilerConfig } from '../service-config.js';
import { stringify } from 'yaml';
import { AsVariableError, freshStackFile, parseAsVariable, type AsVariable, type ExportedVariable } from '../../reconciler/export/variables.js';
import { defaultEnvironment, type Environment } from '../../reconciler/manifests/environments.js';
import { readStackFile } from '../../reconciler/manifests/config.js';
import { stackOf } from '../environment.js';
import { openTarget, type TargetFlags } from '../target.js';

export interface ExportFlags extends TargetFlags { out?: string; stack?: string; all?: boolean; force?: boolean; env?: string; asVariable?: string[] }

/** `export [--out DIR]`: one file per kind in DIR (with an edgeplane.yaml naming the stack), or all documents on stdout. */
export async function exportCmd(out: Output, flags: ExportFlags): Promise<void> {
  // Not a directory: refused before anything is read, with --force too.
  if (flags.out && existsSync(flags.out) && !statSync(flags.out).isDirectory()) throw new CliExit(EXIT.error, `--out ${flags.out}: not a directory`);
  let asVariables: AsVariable[];
  try {
    asVariables = (flags.asVariable ?? []).map(parseAsVariable);
  } catch (err) {
    if (err instanceof AsVariableError) throw new CliExit(EXIT.error, `error: ${err.message}`);
    throw err;
  }
  if (flags.out && !flags.force) refuseManifestsIn(flags.out);
  const outThere = !!flags.out && existsSync(flags.out);
  // --env: the environment of the stack file in --out, else of the current directory (its stack name and values).
  const envRoot = outThere && CONFIG_FILES.some((c) => existsSync(join(flags.out!, c))) ? flags.out! : '.';
  let stack: string;
  let environment: Environment | undefined;
  if (flags.env !== undefined && flags.env !== '') {
    ({ stack, environment } = stackOf(envRoot, flags));
    if (outThere && envRoot !== flags.out) refuseOtherStack(flags.out!, stack);
  } else {
    ({ stack } = resolveStack(outThere ? flags.out! : '.', flags.stack));
    if (outThere) refuseOtherStack(flags.out!, stack);
  }
  const client = await openTarget(flags, { readOnly: 'exporting from an empty database', out, root: outThere ? flags.out! : '.', environment });
  let result;
  try {
    // No --env: the variables the stack file the manifests will be planned with declares already,
    // with their defaults (a variable declared there is used with its value, not declared again).
    const declaredIn = !environment && asVariables.length ? (flags.out ? (envRoot === flags.out ? envRoot : undefined) : envRoot) : undefined;
    const values = environment?.vars.values ?? (declaredIn !== undefined ? defaultEnvironment(declaredIn).vars.values : undefined);
    const variables = asVariables.length || environment ? { asVariables, values, implicit: !!environment } : undefined;
    result = exportState(await readLiveState(client), { stack, all: flags.all, config: reconcilerConfig(), header: schemaModeline(MANIFEST_SCHEMA_FILE), variables });
  } catch (err) {
    if (err instanceof AsVariableError) throw new CliExit(EXIT.error, `error: ${err.message}`);
    throw err;
  } finally {
    await client.close();
  }
  for (const w of result.warnings) out.error(`warning: ${w}`);
  if (!result.files.some((f) => f.objects > 0)) {
    // Nothing: most often the stack is not the one meant (no --stack, no edgeplane.yaml here). Say
    // which there are, and write nothing (no directory, no edgeplane.yaml naming the wrong stack).
    const { stacks, unmanaged } = result.elsewhere;
    const others = stacks.length ? `stacks with objects: ${stacks.join(', ')} (give --stack)` : 'no stack has objects here';
    out.error(`nothing to export: no objects of stack "${stack}"; ${others}${!flags.all && unmanaged ? `; ${unmanaged} unmanaged object${unmanaged === 1 ? '' : 's'} (add --all)` : ''}`);
    return;
  }
  if (flags.out) {
    mkdirSync(flags.out, { recursive: true });
    for (const f of result.files) writeFileSync(join(flags.out, f.name), f.text);
    // An earlier export's file of a kind the stack no longer has (--force): emptied, not left to
    // plan its objects again.
    const emptied = result.emptyKindFiles.filter((name) => existsSync(join(flags.out!, name)));
    for (const name of emptied) writeFileSync(join(flags.out, name), `# edgeplane export: stack "${stack}" has no objects of this kind.\n`);
    if (emptied.length) out.error(`emptied ${emptied.join(', ')}: the stack has no objects of ${emptied.length === 1 ? 'that kind' : 'those kinds'} now`);
    if (!CONFIG_FILES.some((c) => existsSync(join(flags.out!, c)))) {
      writeFileSync(join(flags.out, 'edgeplane.yaml'), `${schemaModeline(STACK_FILE_SCHEMA_FILE)}\n${freshStackFile(stack, environment && { name: environment.name!, base: baseStack(environment) }, result.variables)}`);
      if (result.variables.length) info(out, `edgeplane.yaml declares the variables the manifests use (${result.variables.map((v) => v.name).join(', ')})${environment ? `, with environment ${environment.name}'s values` : ', with their values as defaults'}`);
    } else printVariablesToAdd(out, environment, result.variables, flags.out);
    const n = result.files.reduce((a, f) => a + f.objects, 0);
    info(out, `exported ${n} object${n === 1 ? '' : 's'} of stack "${stack}"${flags.all ? ' and unmanaged objects' : ''} to ${displayPath(flags.out)}: ${result.files.map((f) => f.name).join(', ') || '(nothing)'}`);
  } else {
    const text = result.files.map((f) => f.text).join('---\n').replace(/\n$/, '');
    if (text) out.line(text);
    printVariablesToAdd(out, environment, result.variables, envRoot);
  }
  const used = result.variables.filter((v) => !v.isNew);
  if (used.length) info(out, `written as variables of environment ${environment?.name}: ${used.map((v) => `${v.name} (${v.uses} place${v.uses === 1 ? '' : 's'})`).join(', ')}`);
  if (result.secrets.length) {
    out.error('these secrets are read from the environment (set them before plan / apply):');
    for (const s of result.secrets) out.error(`  ${s.env}  (${s.identity} ${s.path})`);
  }
}

/** The `stack:` of the stack file an environment was read from (the base of its environments' stacks). */
function baseStack(environment: Environment): string | undefined {
  const base = environment.stackFile ? readStackFile(environment.stackFile).settings.stack : undefined;
  return typeof base === 'string' ? base : undefined;
}

/** The variables new to an existing stack file, as the block to add to it (on stderr: the user's file is not rewritten). */
function printVariablesToAdd(out: Output, environment: Environment | undefined, variables: ExportedVariable[], dir: string): void {
  const fresh = variables.filter((v) => v.isNew);
  if (!fresh.length) return;
  const file: Record<string, unknown> = environment?.name !== undefined
    ? { variables: Object.fromEntries(fresh.map((v) => [v.name, { type: v.type }])), environments: { [environment.name]: { values: Object.fromEntries(fresh.map((v) => [v.name, v.value])) } } }
    : { variables: Object.fromEntries(fresh.map((v) => [v.name, { type: v.type, default: v.value }])) };
  const where = environment?.shownStackFile ?? displayPath(join(dir, 'edgeplane.yaml'));
  out.error(`the manifests refer to variable${fresh.length === 1 ? '' : 's'} ${fresh.map((v) => v.name).join(', ')}: add to ${where}${environment ? ' (and a value in each other environment)' : ''}:`);
  for (const line of stringify(file, { lineWidth: 0 }).trimEnd().split('\n')) out.error(`  ${line}`);
}

/**
 * A directory that already holds manifests is not exported into without `--force`: the export would
 * replace hand-written files (their comments and layout), or sit beside them describing the same
 * objects a second time, which the next plan refuses as duplicate names. Checked before anything
 * is read.
 */
function refuseManifestsIn(dir: string): void {
  if (!existsSync(dir)) return;
  if (!statSync(dir).isDirectory()) throw new CliExit(EXIT.error, `--out ${dir}: not a directory`);
  const present = manifestFiles(dir).map((f) => relative(dir, f));
  if (!present.length) return;
  const shown = present.slice(0, 3).join(', ') + (present.length > 3 ? `, … (${present.length} files)` : '');
  throw new CliExit(EXIT.error, `--out ${dir} already holds manifests (${shown}): export into a new or empty directory, or add --force to overwrite the files export writes (one per kind)`);
}

/**
 * `--stack S --out DIR` where DIR's `edgeplane.yaml` names another stack: the files would be
 * planned as that stack's, which would make copies of the exported objects and delete that
 * stack's own. Refused, `--force` or not (it overwrites the files export writes, not the stack).
 */
function refuseOtherStack(dir: string, stack: string): void {
  const there = resolveStack(dir);
  if (there.stack === stack) return;
  if (there.source === 'default') {
    // A stack file with no `stack:` names the default stack: planned from there, the objects would be its.
    const file = CONFIG_FILES.find((c) => existsSync(join(dir, c)));
    if (!file) return;
    throw new CliExit(EXIT.error, `--out ${dir}: ${file} names no stack, so plans from there are stack "default"'s, not "${stack}"'s (copies would be made): add \`${stackLine(stack)}\` to it, or export into another directory`);
  }
  throw new CliExit(EXIT.error, `--out ${dir}: ${there.source} names stack "${there.stack}", not "${stack}"; planned from there, the exported objects would be stack "${there.stack}"'s (copies made, and "${there.stack}"'s own objects deleted): export into another directory, or change its stack first`);
}
