import { existsSync, readFileSync, statSync } from 'node:fs';
import { applyPlan, type ApplyResult } from '../../reconciler/apply/execute.js';
import type { HeldStackLock } from '../../reconciler/lock/stack-lock.js';
import { lockedRun, waitsForStateDir, type LockFlags } from '../stack-lock.js';
import { isSecretPath, planSecrets, secretsFromMap, secretsFromSources, StaleSecretError, type SecretLookup } from '../../reconciler/apply/materialize.js';
import { findKind } from '../../kinds/registry.js';
import { readSecretFile } from '../../reconciler/manifests/secrets.js';
import { preparePlan } from '../../reconciler/plan/prepare.js';
import { staleReasons } from '../../reconciler/apply/stale.js';
import type { Environment } from '../../reconciler/manifests/environments.js';
import { envArgv, stackOf } from '../environment.js';
import { filesToPlan } from '../../reconciler/manifests/load.js';
import { formatProblem, hasErrors } from '../../reconciler/manifests/problems.js';
import type { Plan } from '../../reconciler/plan/types.js';
import { parsePlan } from '../../reconciler/render/json.js';
import { renderText } from '../../reconciler/render/text.js';
import { summaryLine, waitingLine } from '../../reconciler/render/values.js';
import { gatePlan } from '../../reconciler/apply/gate.js';
import { RunRecord } from '../../reconciler/apply/run-record.js';
import { cleanHeadCommit } from '../../agent/git.js';
import { holderName } from '../holder.js';
import { readLiveState } from '../../reconciler/state/read-state.js';
import type { ApiClient } from '../../client/api-client.js';
import { canPrompt, confirm } from '../confirm.js';
import { CliExit, EXIT, exitForSignal, onStopSignals } from '../exit.js';
import { info, useColor, type Output } from '../output.js';
import { progressFor } from '../progress.js';
import { reconcilerConfig } from '../service-config.js';
import { openTarget, targetArgs, type TargetFlags } from '../target.js';
import { overridesOf, policyInput, scopeInput, targetError } from './plan.js';
import { withOverrides } from '../../reconciler/policy/evaluate.js';

export interface ApplyFlags extends TargetFlags, LockFlags {
  plan?: string;
  stack?: string;
  env?: string;
  autoApprove?: boolean;
  parallelism?: string;
  force?: boolean;
  json?: boolean;
  adopt?: boolean;
  strict?: boolean;
  target?: string[];
  allowProtectedChanges?: boolean;
  overridePolicy?: string[];
  reason?: string;
  /** `destroy DIR`: apply the plan that deletes every object the stack owns. */
  destroy?: boolean;
}

export function parallelismOf(flags: { parallelism?: string }): number {
  const n = flags.parallelism === undefined ? 8 : Number(flags.parallelism);
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new CliExit(EXIT.error, `--parallelism must be an integer from 1 to 64, not ${flags.parallelism}`);
  return n;
}

/** `apply DIR` plans and applies; `apply --plan FILE` (or `apply FILE.json`) applies a saved plan. */
export async function apply(out: Output, dir: string | undefined, flags: ApplyFlags): Promise<void> {
  const planFile = flags.plan ?? (dir && /\.json$/i.test(dir) && existsSync(dir) && statSync(dir).isFile() ? dir : undefined);
  if (planFile && dir && dir !== planFile) throw new CliExit(EXIT.error, 'give either a manifest directory or --plan FILE, not both');
  if (!planFile && !dir) throw new CliExit(EXIT.error, 'apply needs a manifest directory (or --plan FILE)');
  const parallelism = parallelismOf(flags);
  if (planFile) return applySaved(out, planFile, flags, parallelism);
  return applyDir(out, dir!, flags, parallelism);
}

/**
 * `destroy DIR`: the plan that deletes every object the stack owns, applied as `apply DIR` applies
 * a plan (the same confirmation, gates and executor).
 */
export async function destroy(out: Output, dir: string, flags: Omit<ApplyFlags, 'plan' | 'force' | 'adopt' | 'strict' | 'destroy'>): Promise<void> {
  return applyDir(out, dir, { ...flags, destroy: true }, parallelismOf(flags));
}

async function applyDir(out: Output, dir: string, flags: ApplyFlags, parallelism: number): Promise<void> {
  filesToPlan(dir); // a directory that is not there, or holds no manifest, fails before the service starts
  const { stack, environment } = stackOf(dir, flags);
  const scope = { ...scopeInput(dir, flags), ...policyInput(dir, flags) };
  const commit = cleanHeadCommit(dir);
  const client = await openTarget(flags, { out, root: dir, environment, ...waitsForStateDir(out, flags) });
  const envArgs = envArgv(environment).map((w) => ` ${w}`).join('');
  try {
    const record = new RunRecord(client, { stack, commit: await commit, trigger: 'cli', holder: holderName(flags.destroy ? 'destroy' : 'apply'), args: `${dir}${envArgs} --stack ${stack}${flags.destroy ? ' --destroy' : ''}` });
    // Planned from the live state read once the lock is held: an apply that waited for another
    // one sees what that one made, and creates nothing twice. The run is recorded before the lock
    // is released: an agent that takes the stack next finds it in the sync record.
    await lockedRun(out, client, stack, flags, 'apply', async (held, phase) => {
      try {
        await planAndApply(out, client, dir, stack, flags, parallelism, scope, held, phase, record, environment);
        record.outcome ??= 'applied';
      } catch (err) {
        if (!record.outcome) record.finish('failed', (err instanceof Error && err.message) || `${flags.destroy ? 'destroy' : 'apply'} did not finish`);
        throw err;
      } finally {
        await writeRecord(out, record);
      }
    });
  } finally {
    await client.close();
  }
}

/** Sends the run to the service's sync record; a failure to do so is said, and is not the apply's. */
async function writeRecord(out: Output, record: RunRecord): Promise<void> {
  try {
    await record.write();
  } catch (err) {
    info(out, `note: the run was not recorded in the service's sync record: ${(err as Error).message}`);
  }
}

async function planAndApply(out: Output, client: ApiClient, dir: string, stack: string, flags: ApplyFlags, parallelism: number, scope: ReturnType<typeof scopeInput>, held: HeldStackLock, phase: { executing: boolean }, record: RunRecord, environment: Environment): Promise<void> {
  {
    let prepared;
    try {
      prepared = await preparePlan({
        root: dir, stack, strict: flags.strict, env: process.env, adopt: flags.adopt, config: reconcilerConfig(), ...scope, environment,
        adoptCommand: `edgeplane apply ${dir}${envArgv(environment).map((w) => ` ${w}`).join('')} --stack ${stack}${targetArgs(flags)} --adopt`,
      }, client).catch((err: unknown) => { throw targetError(err); });
    } catch (err) {
      // The live state could not be read (the API down, a refused key): a machine reading stdout learns why too.
      if (flags.json) out.json({ event: 'error', error: err instanceof Error ? err.message : String(err) });
      throw err;
    }
    for (const p of prepared.problems) out.error(formatProblem(p));
    if (hasErrors(prepared.problems) || !prepared.plan) {
      const errors = prepared.problems.filter((p) => p.severity === 'error');
      record.finish('failed', `the manifests do not validate: ${errors.slice(0, 20).map(formatProblem).join('; ')}`);
      if (flags.json) out.json({ event: 'problems', problems: prepared.problems });
      throw new CliExit(EXIT.error);
    }
    const plan = prepared.plan;
    if (environment.name !== undefined) plan.environment = environment.name;
    record.plan = plan;
    if (flags.json) {
      out.json({
        event: 'plan', stack: plan.stack, ...(plan.environment !== undefined ? { environment: plan.environment } : {}), target: plan.target, summary: plan.summary, steps: plan.steps.length, warnings: plan.warnings, conflicts: plan.conflicts, blocked: plan.blocked,
        ...(plan.protectedChanges ? { protectedChanges: plan.protectedChanges } : {}), ...(plan.partial ? { partial: plan.partial } : {}), ...(plan.destroy ? { destroy: true } : {}),
        ...(plan.policy ? { policy: plan.policy } : {}),
      });
    }
    else out.line(renderText(plan, { color: useColor() }).replace(/\n$/, ''));
    try {
      gate(out, plan, flags, record);
      if (!plan.steps.length) {
        record.finish('no_changes');
        if (flags.json) out.json({ event: 'summary', total: 0, done: 0, failed: 0, skipped: 0, ms: 0 });
        return;
      }
      // Refused at the confirmation: nothing was tried, nothing is recorded.
      if (!flags.autoApprove) {
        record.skip = true;
        if (!canPrompt()) throw new CliExit(EXIT.error, `${plan.destroy ? 'destroy' : 'apply'}: no terminal to ask for confirmation; pass --auto-approve (CI)${plan.destroy ? '' : ' or save a plan with `plan --out` and apply it'}`);
        const question = plan.destroy
          ? `\nDestroy stack "${plan.stack}" on ${plan.target}: delete ${plan.summary.delete} object${plan.summary.delete === 1 ? '' : 's'}? Only "yes" is accepted: `
          : `\nApply ${summaryLine(plan).replace(/^Plan: /, '')}${plan.partial ? ' (partial: --target)' : ''} on ${plan.target}? Only "yes" is accepted: `;
        if (!(await confirm(question))) {
          throw new CliExit(EXIT.error, `${plan.destroy ? 'destroy' : 'apply'} cancelled`);
        }
        record.skip = false;
      }
    } catch (err) {
      // Refused before any step (conflicts, the threshold, no confirmation): the JSON stream says why, as for an unreadable state.
      if (flags.json && err instanceof CliExit && err.message) out.json({ event: 'error', error: err.message, exit_code: err.code });
      throw err;
    }
    phase.executing = true;
    await execute(out, client, plan, secretsFromMap(prepared.secrets), flags, parallelism, held);
  }
}

/** A refusal of `apply --plan` before any step: on stderr (by the caller), and as the JSON stream's `error` event. */
function refusal(out: Output, flags: ApplyFlags, code: number, message: string): CliExit {
  if (flags.json) out.json({ event: 'error', error: message, exit_code: code });
  return new CliExit(code, message);
}

async function applySaved(out: Output, file: string, flags: ApplyFlags, parallelism: number): Promise<void> {
  let plan: Plan;
  try {
    plan = parsePlan(readFileSync(file, 'utf8'));
  } catch (err) {
    throw refusal(out, flags, EXIT.error, `${file}: ${(err as Error).message}`);
  }
  const client = await openTarget(flags, { out, ...waitsForStateDir(out, flags) });
  try {
    if (plan.target !== client.target) throw refusal(out, flags, EXIT.error, `${file} was planned for ${plan.target}, not ${client.target}`);
    if (flags.stack !== undefined && flags.stack !== plan.stack) throw refusal(out, flags, EXIT.error, `${file} was planned for stack "${plan.stack}", not "${flags.stack}"`);
    // Overrides given now, for the policies the saved plan checked (it knows which may be overridden of those that denied).
    if (flags.overridePolicy?.length || flags.reason !== undefined) {
      const known = (plan.policy?.checked ?? []).map((name) => ({ name, overridable: plan.policy!.outcomes.find((o) => o.policy === name)?.overridable ?? true }));
      let overrides;
      try {
        overrides = overridesOf(flags, known);
      } catch (err) {
        if (err instanceof CliExit) throw refusal(out, flags, err.code, err.message);
        throw err;
      }
      if (plan.policy) plan = { ...plan, policy: withOverrides(plan.policy, overrides) };
    }
    try {
      gate(out, plan, flags);
    } catch (err) {
      if (err instanceof CliExit) throw refusal(out, flags, err.code, err.message);
      throw err;
    }
    // The stale check reads the live state under the lock: nothing else applies this stack from then on.
    // Recorded with no commit: a saved plan says nothing of the one it was made from.
    const record = new RunRecord(client, { stack: plan.stack, commit: null, trigger: 'cli', holder: holderName('apply --plan') });
    record.plan = plan;
    await lockedRun(out, client, plan.stack, flags, 'apply --plan', async (held, phase) => {
      try {
        await applySavedLocked(out, client, file, plan, flags, parallelism, held, phase);
        record.outcome ??= plan.steps.length ? 'applied' : 'no_changes';
      } catch (err) {
        if (!record.outcome) record.finish('failed', (err instanceof Error && err.message) || 'apply --plan did not finish');
        throw err;
      } finally {
        await writeRecord(out, record);
      }
    });
  } finally {
    await client.close();
  }
}

async function applySavedLocked(out: Output, client: ApiClient, file: string, plan: Plan, flags: ApplyFlags, parallelism: number, held: HeldStackLock, phase: { executing: boolean }): Promise<void> {
  {
    const stale = staleReasons(plan, await readLiveState(client));
    const readFile = (p: string) => {
      if (!existsSync(p)) return undefined;
      try {
        return readSecretFile(p);
      } catch (err) {
        throw new Error(`cannot read secret file ${p}: ${(err as Error).message}`);
      }
    };
    const tokens = planSecrets(plan.steps);
    const secrets = await secretsFromSources({ stack: plan.stack, env: process.env, readFile },
      tokens.map((t) => ({ identity: t.step.object.identity, path: t.path, token: t.token })), (stack, asks) => client.fingerprintSecrets(stack, asks));
    const secretProblems: string[] = [];
    for (const s of tokens) {
      const kind = findKind(s.step.object.kind);
      if (!kind || !isSecretPath(kind, s.path)) {
        secretProblems.push(`${s.step.object.identity}: the saved plan holds a secret at ${s.path}, which is not a secret field of ${kind?.title ?? s.step.object.kind}; plan does not make such a plan (edited?): refused`);
        continue;
      }
      try {
        secrets.value(s.step.object.identity, s.path, s.token);
      } catch (err) {
        if (err instanceof StaleSecretError) stale.push(err.message);
        else secretProblems.push((err as Error).message);
      }
    }
    if (stale.length) {
      for (const r of stale) out.error(`stale: ${r}`);
      if (flags.json) out.json({ event: 'error', error: `${file} is stale: what it was planned from has changed; run plan again`, stale, exit_code: EXIT.stale });
      throw new CliExit(EXIT.stale, `${file} is stale: what it was planned from has changed (above); run plan again`);
    }
    if (secretProblems.length) {
      for (const r of secretProblems) out.error(`error: ${r}`);
      if (flags.json) out.json({ event: 'error', error: secretProblems.join('; '), exit_code: EXIT.error });
      throw new CliExit(EXIT.error);
    }
    if (!plan.steps.length) {
      // A saved partial plan whose target steps all wait for others changes nothing, and is not "no changes".
      const waiting = plan.partial?.waiting;
      out.line(waiting ? waitingLine(waiting, 'plan without --target, or with the objects its warnings name') : plan.partial ? 'No changes among the targets.' : 'No changes. The live state matches the manifests.');
      return;
    }
    if (!flags.json) out.line(`${plan.destroy ? 'Destroying' : 'Applying'} ${file}: ${summaryLine(plan).replace(/^Plan: /, '')} on ${plan.target}${plan.partial ? ` (partial: only --target ${plan.partial.targets.join(', ')})` : ''}${plan.destroy ? ' (destroy)' : ''}`);
    phase.executing = true;
    await execute(out, client, plan, secrets, flags, parallelism, held);
  }
}

/** Conflicts stop everything; the safety threshold stops unless forced, protected objects unless allowed (`gatePlan`). */
function gate(out: Output, plan: Plan, flags: ApplyFlags, record?: RunRecord): void {
  const { refusal, warnings } = gatePlan(plan, flags);
  if (refusal) record?.finish('blocked', refusal.message);
  if (refusal) throw new CliExit(refusal.reason === 'conflicts' ? EXIT.error : EXIT.blocked, refusal.message);
  for (const w of warnings) out.error(w);
}

async function execute(out: Output, client: ApiClient, plan: Plan, secrets: SecretLookup, flags: ApplyFlags, parallelism: number, held: HeldStackLock): Promise<ApplyResult> {
  const progress = progressFor(out, { json: flags.json, color: useColor(), total: plan.steps.length, verb: plan.destroy ? 'Destroy' : 'Apply' });
  const ac = new AbortController();
  // Ctrl-C, or SIGTERM (a CI job cancelled; the runner kills later): stop starting steps, let
  // running ones finish, report; a second signal exits at once.
  const onSignal = (signal: NodeJS.Signals) => {
    if (ac.signal.aborted) exitForSignal(signal);
    ac.abort(new Error('interrupted'));
    out.error(`\ninterrupted (${signal}): finishing the steps in flight (${signal === 'SIGINT' ? 'Ctrl-C' : 'the signal'} again to quit now); run apply again to converge`);
  };
  const offSignal = onStopSignals(onSignal);
  let result: ApplyResult;
  let lostAtEnd = false;
  try {
    // A lost lock stops the apply as Ctrl-C does: another apply may be writing the stack now. Lost
    // already (at the confirmation prompt, say), nothing starts; run out by this process's clock
    // (it stalled), no further step starts.
    if (held.signal.aborted || !held.valid()) ac.abort(held.signal.reason);
    else held.signal.addEventListener('abort', () => ac.abort(held.signal.reason), { once: true });
    result = await applyPlan(plan, { client, secrets, parallelism, onEvent: (e) => progress.event(e), signal: ac.signal, mayStart: () => held.valid() });
    // Every step done, the lock is asked about once more: released by force since the last beat
    // (another apply may have written the stack meanwhile), this apply does not say it converged.
    if (!result.failed.length && !result.skipped.length && !result.stale.length && !ac.signal.aborted) lostAtEnd = !(await held.confirm());
  } finally {
    offSignal();
  }
  progress.finish(result);
  if (result.stale.length) {
    // Someone changed these objects since they were read (outside this stack's applies, which wait for the lock).
    for (const s of result.stale) out.error(`stale: ${s.identity} (${s.id}) changed since the plan read it: not overwritten; the steps after it did not run`);
    throw new CliExit(EXIT.stale, flags.json ? '' : `apply stopped where objects changed under it (above): plan again, review, and apply`);
  }
  if (result.failed.length || result.skipped.length) {
    // The lock lost: another apply may hold the stack now; it, or a run after it, converges.
    if (held.signal.aborted && !result.failed.length) {
      throw new CliExit(EXIT.locked, flags.json ? '' : `apply stopped: the stack's lock was lost (above), so another apply may be writing it; ${result.done.length} of ${plan.steps.length} steps done. Run apply again once that one is done`);
    }
    const why = result.failed.length ? 'fix the failures above and run apply again' : ac.signal.aborted ? 'it was interrupted; run apply again to finish' : 'run apply again';
    throw new CliExit(EXIT.error, flags.json ? '' : `apply did not finish: ${why} (it resumes from the live state)`);
  }
  if (lostAtEnd) {
    throw new CliExit(EXIT.locked, flags.json ? '' : `apply done, but the stack's lock was lost while it ran (above), so another apply may have written the stack too: run plan to see, and apply again once that one is done`);
  }
  return result;
}
