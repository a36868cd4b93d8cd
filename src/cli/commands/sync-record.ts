import { getStack, listRuns, listStacks, requestSync, type StackSummary, type SyncRun } from '../../client/sync-record.js';
import { STACK_NAME } from '../../contract/stack-name.js';
import { CliExit, EXIT } from '../exit.js';
import { holderName } from '../holder.js';
import type { Output } from '../output.js';
import { openTarget, type TargetFlags } from '../target.js';

export interface RecordFlags extends TargetFlags { json?: boolean; limit?: string }

function stackArg(stack: string): string {
  if (!STACK_NAME.test(stack)) throw new CliExit(EXIT.error, `"${stack}" is not a stack name (lower-case letters, digits, ".", "_" or "-"; 1-64 characters)`);
  return stack;
}

const short = (sha: string | undefined | null) => (sha ? sha.slice(0, 10) : '-');

/** Rows as columns padded to their widest cell. */
export function table(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd());
}

function statusRows(stacks: StackSummary[]): string[][] {
  return [
    ['STACK', 'STATUS', 'LIVE COMMIT', 'LAST RUN', 'DRIFT', 'LOCK'],
    ...stacks.map((s) => [
      s.stack,
      s.status + (s.sync_requested_at ? ' (sync asked)' : ''),
      s.live_commit ? `${short(s.live_commit.sha)} ${(s.live_commit.subject ?? '').slice(0, 40)}`.trim() : '-',
      s.last_run ? `${s.last_run.outcome} (${s.last_run.trigger}) ${s.last_run.finished_at}` : '-',
      s.drift_count === null ? '-' : String(s.drift_count),
      s.lock ? s.lock.holder.slice(0, 60) : '-',
    ]),
  ];
}

/** `status [STACK]`: every stack's summary (or one) from the service's sync record. */
export async function status(out: Output, stack: string | undefined, flags: RecordFlags): Promise<void> {
  const name = stack === undefined ? undefined : stackArg(stack);
  const client = await openTarget(flags, { readOnly: 'no stack has a record yet' });
  try {
    const stacks = name === undefined ? await listStacks(client) : [await getStack(client, name)].filter((s): s is StackSummary => s !== null);
    if (flags.json) return out.json(name === undefined ? stacks : stacks[0] ?? null);
    if (!stacks.length) return out.line(name === undefined ? 'no stack has a run yet' : `stack "${name}": no run, lock or sync request yet`);
    for (const l of table(statusRows(stacks))) out.line(l);
    const one = stacks.length === 1 ? stacks[0] : undefined;
    if (one?.last_run && one.last_run.outcome !== 'applied' && one.last_run.outcome !== 'no_changes') {
      out.line(`\nlast run: edgeplane history ${one.stack}`);
    }
  } finally {
    await client.close();
  }
}

function historyRows(runs: SyncRun[]): string[][] {
  return [
    ['FINISHED', 'OUTCOME', 'TRIGGER', 'COMMIT', 'CHANGES', 'POLICIES', 'BY', 'ERROR'],
    ...runs.map((r) => [
      r.finished_at,
      r.outcome,
      r.trigger,
      r.commit ? `${short(r.commit.sha)} ${(r.commit.subject ?? '').slice(0, 30)}`.trim() : '-',
      `+${r.counts.create} ~${r.counts.update} ±${r.counts.replace} -${r.counts.delete}`,
      r.policy ? `${r.policy.denied} denied, ${r.policy.warned} warned${r.policy.overrides.length ? `, ${r.policy.overrides.length} overridden` : ''}` : '-',
      r.holder.slice(0, 40),
      r.error ? r.error.replace(/\s+/g, ' ').slice(0, 80) : '',
    ]),
  ];
}

/** `history STACK`: the stack's runs, newest first; under a run, the policies it overrode and why. */
export async function history(out: Output, stack: string, flags: RecordFlags): Promise<void> {
  const name = stackArg(stack);
  const limit = flags.limit === undefined ? 20 : Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new CliExit(EXIT.error, `--limit must be an integer from 1 to 1000, not ${flags.limit}`);
  const client = await openTarget(flags, { readOnly: 'no stack has a record yet' });
  try {
    const runs = await listRuns(client, name, limit);
    if (flags.json) return out.json(runs);
    if (!runs.length) return out.line(`stack "${name}": no run yet`);
    const lines = table(historyRows(runs));
    out.line(lines[0]);
    runs.forEach((r, i) => {
      out.line(lines[i + 1]);
      // The overrides a run went ahead with, each with its reason: under the run, in full.
      for (const o of r.policy?.overrides ?? []) out.line(`  overridden: policy ${o.policy} (reason: ${o.reason.replace(/\s+/g, ' ')})`);
    });
  } finally {
    await client.close();
  }
}

/** `sync STACK`: asks the stack's agents, through the service, for a sync now. */
export async function sync(out: Output, stack: string, flags: RecordFlags): Promise<void> {
  const name = stackArg(stack);
  const client = await openTarget(flags);
  try {
    const s = await requestSync(client, name, holderName('sync'));
    if (flags.json) return out.json(s);
    out.line(`asked for a sync of stack "${name}" at ${s.sync_requested_at}: the agents that sync it start within 5 s (edgeplane status ${name})`);
  } finally {
    await client.close();
  }
}
