import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Argument, Command, Option } from 'commander';
import { CliExit } from './exit.js';
import { packageVersion } from '../util/package-version.js';
import { completionScript, SHELLS, type Shell } from './completion.js';
import { addHelpEpilogues } from './help.js';
import { cliSettings, stdio } from './output.js';
import { prestart } from './prestart.js';
import { abandonClaim, engineTier } from '../embedded/spare.js';

/**
 * The one command table. Each action loads its module when it runs, so `edgeplane validate` does
 * not pay for fastify and PGlite.
 */
export const program = new Command('edgeplane')
  .description('Traffic-edge configuration as code: the management API service and its reconciler')
  .version(packageVersion(), '-V, --version', 'print the version and exit')
  // Shared by every command (given before or after it): read in the preAction hook below.
  .option('-q, --quiet', 'print only results and errors (no remarks such as a directory made or a plan saved)')
  .option('--no-color', 'no colour, whatever the terminal (also NO_COLOR=1; FORCE_COLOR=1 forces it on a pipe)')
  .showHelpAfterError()
  .exitOverride();

/** Processes that stay up keep the embedded engine's optimising tier (`engineTier`); the others do not. */
const LONG_RUNNING = new Set(['serve', 'watch', 'agent']);
program.hook('preAction', (_program, command) => {
  engineTier.liftoffOnly = !LONG_RUNNING.has(command.name());
  // The embedded service's thread starts now, beside the command's own loading, when the command
  // will most likely use it (prestart.ts).
  prestart(command.name(), command.opts(), command.args[0]);
  const globals = program.opts<{ quiet?: boolean; color?: boolean }>();
  cliSettings.quiet = !!globals.quiet;
  if (globals.color === false) cliSettings.color = false;
});

const stateOption = () => new Option('--state <dir>', 'embedded database directory (when DATABASE_URL is not set)').env('EDGEPLANE_STATE');
// Options shared by the reconciler commands: one declaration each.
const stackOption = () => new Option('--stack <name>', 'stack name (default: stack: in edgeplane.yaml, else "default")');
const envOption = () => new Option('--env <name>', 'the environment of edgeplane.yaml to use (its stack name, variable values and overlays)').env('EDGEPLANE_ENV');
const strictOption = () => new Option('--strict', 'literal secrets are errors, not warnings');
const parallelismOption = () => new Option('--parallelism <n>', 'steps run at once').default('8');
const targetOption = () => new Option('--target <selector>', 'only these objects (Kind/name, HTTPSEdge/edge/routes/route, or a glob such as \'HTTPSEdge/shop-*\'), plus creates of what they refer to; repeatable')
  .argParser((v: string, all: string[] = []) => [...all, v]);
const allowProtectedOption = () => new Option('--allow-protected-changes', 'let the plan delete and replace protected objects (protect: true, or safety.protect in edgeplane.yaml)');
/** `--override-policy NAME --reason TEXT` (docs/policies.md). */
const overridePolicyOptions = (c: Command) =>
  c
    .addOption(new Option('--override-policy <name>', 'let this policy\'s denials through for this run (with --reason; shown in the plan, kept in the sync record); repeatable')
      .argParser((v: string, all: string[] = []) => [...all, v]))
    .addOption(new Option('--reason <text>', 'why the policies --override-policy names are let through'));

program
  .command('serve')
  .description('run the management API (PostgreSQL when DATABASE_URL is set, else PGlite in --state)')
  .option('--port <n>', 'port to listen on', '8080')
  .option('--host <h>', 'address to listen on', '127.0.0.1')
  .addOption(stateOption())
  .addOption(new Option('--log-level <level>', 'pino log level').env('EDGEPLANE_LOG_LEVEL'))
  .addOption(new Option('--tls-cert <file>', 'PEM certificate chain: serve HTTPS (with --tls-key)').env('EDGEPLANE_TLS_CERT'))
  .addOption(new Option('--tls-key <file>', 'PEM private key of --tls-cert').env('EDGEPLANE_TLS_KEY'))
  .addOption(new Option('--metrics <mode>', 'Prometheus metrics at GET /metrics: on or off').choices(['on', 'off']).default('on').env('EDGEPLANE_METRICS'))
  .addOption(new Option('--metrics-port <n>', 'serve GET /metrics on this port (same --host) instead of the API port').env('EDGEPLANE_METRICS_PORT'))
  .addOption(new Option('--ui <mode>', 'the status page at /ui/: on or off').choices(['on', 'off']).default('on').env('EDGEPLANE_UI'))
  .action(async (flags) => (await import('./commands/serve.js')).serve(flags));

const targetOptions = (c: Command) =>
  c
    .addOption(new Option('--api-url <url>', 'API to plan against (default: the embedded service on --state)').env('EDGEPLANE_API_URL'))
    .addOption(new Option('--api-key <key>', 'API key for --api-url').env('EDGEPLANE_API_KEY'))
    .addOption(new Option('--timeout <duration>', 'give up on a request the API has not answered in this long (90s, 2m, or seconds; default 30)').env('EDGEPLANE_TIMEOUT'))
    .addOption(stateOption());
const lockTimeoutOption = () => new Option('--lock-timeout <duration>', 'how long to wait for the stack\'s lock while another apply or watch holds it, and (embedded) for the state directory another command holds (90s, 2m, or seconds; default 2m)').env('EDGEPLANE_LOCK_TIMEOUT');

program
  .command('init [dir]')
  .description('start a stack in DIR (default: here): edgeplane.yaml, a commented manifest, .gitignore, editor settings')
  .option('--stack <name>', 'stack name (default: the directory\'s name)')
  .action(async (dir, flags) => (await import('./commands/init.js')).init(stdio, dir, flags));

program
  .command('validate <dir>')
  .description('validate manifests (a directory, read recursively, or one file) and report every problem')
  .addOption(strictOption())
  .addOption(stackOption())
  .addOption(envOption())
  .option('--allow-missing-secrets', 'secrets whose environment variable or file is missing are not errors (a job that has no secrets)')
  .option('--json', 'print {"valid", "problems"}')
  .action(async (dir, flags) => (await import('./commands/validate.js')).validate(stdio, dir, flags));

targetOptions(overridePolicyOptions(
  program
    .command('plan <dir>')
    .description('show the API calls that would make the live state match the manifests (the directory of a stack)')
    .addOption(stackOption())
    .addOption(envOption())
    .option('--out <file>', 'save the plan (JSON) for `apply --plan <file>`')
    .option('--json', 'print the plan as JSON (each update with an RFC 6902 patch and the fields before and after)')
    .option('--markdown', 'print the plan as Markdown (pull-request comments), within --markdown-limit characters')
    .option('--markdown-limit <n>', 'characters the --markdown comment may take; what does not fit is counted in it', '65000')
    .option('--out-markdown <file>', 'also write the whole plan as Markdown, nothing left out (a CI job summary or artifact)')
    .option('--detailed-exitcode', 'exit 2 when the plan has changes')
    .option('--adopt', 'take over unmanaged objects that match manifest objects (same hostport, same CA certificate)')
    .addOption(targetOption())
    .option('--destroy', 'plan deleting every object the stack owns (what `edgeplane destroy` applies)')
    .addOption(allowProtectedOption())
    .addOption(strictOption())),
).action(async (dir, flags) => (await import('./commands/plan.js')).plan(stdio, dir, flags));

program
  .command('diff-env <from> <to> <dir>')
  .description('promotion review: how environment TO\'s desired state differs from FROM\'s, object by object and field by field (from the manifests alone)')
  .option('--json', 'print {from, to, onlyIn, changed}')
  .option('--markdown', 'print the differences as Markdown (a pull-request comment)')
  .option('--detailed-exitcode', 'exit 2 when the environments differ')
  .action(async (from, to, dir, flags) => (await import('./commands/diff-env.js')).diffEnv(stdio, from, to, dir, flags));

program
  .command('graph <dir>')
  .description('print the stack\'s objects and what refers to what, from the manifests alone (Mermaid for a README, or DOT for Graphviz)')
  .addOption(new Option('--format <format>', 'output format').choices(['mermaid', 'dot']).default('mermaid'))
  .addOption(stackOption())
  .addOption(new Option('--target <selector>', 'only these objects (Kind/name, HTTPSEdge/edge/routes/route, or a glob such as \'HTTPSEdge/shop-*\'), those under them, and what they refer to; repeatable')
    .argParser((v: string, all: string[] = []) => [...all, v]))
  .addOption(envOption())
  .action(async (dir, flags) => (await import('./commands/graph.js')).graph(stdio, dir, flags));

targetOptions(overridePolicyOptions(
  program
    .command('apply [dir]')
    .description('plan and apply the manifests (asks on a terminal), or apply a saved plan with --plan FILE')
    .option('--plan <file>', 'apply exactly this saved plan (from `plan --out`); refuses (exit 4) when the live state changed since')
    .addOption(stackOption())
    .addOption(envOption())
    .option('--auto-approve', 'do not ask for confirmation (CI)')
    .addOption(parallelismOption())
    .option('--force', 'go ahead although the safety threshold is exceeded')
    .option('--json', 'one JSON event per line (plan, each step, summary)')
    .option('--adopt', 'take over unmanaged objects that match manifest objects')
    .addOption(targetOption())
    .addOption(allowProtectedOption())
    .addOption(lockTimeoutOption())
    .addOption(strictOption())),
).action(async (dir, flags) => (await import('./commands/apply.js')).apply(stdio, dir, flags));

program
  .command('policy')
  .description('policies: rules checked on every plan (docs/policies.md)')
  .command('test <path>')
  .description('check each policy in PATH (a folder or a file) against its own examples: pass examples must pass, fail examples must fail')
  .option('--json', 'print {"passed", "results"}')
  .action(async (path, flags) => (await import('./commands/policy.js')).policyTest(stdio, path, flags));

targetOptions(
  program
    .command('destroy <dir>')
    .description('delete every object the stack owns (asks on a terminal); objects it does not own are never touched')
    .addOption(stackOption())
    .addOption(envOption())
    .option('--auto-approve', 'do not ask for confirmation (CI)')
    .addOption(parallelismOption())
    .option('--json', 'one JSON event per line (plan, each step, summary)')
    .addOption(targetOption())
    .addOption(allowProtectedOption())
    .addOption(lockTimeoutOption()),
).action(async (dir, flags) => (await import('./commands/apply.js')).destroy(stdio, dir, flags));

targetOptions(
  program
    .command('watch <dir>')
    .description('apply the manifests on every save (creates and updates; deletions with --prune)')
    .addOption(stackOption())
    .addOption(envOption())
    .option('--prune', 'also delete owned objects that left the manifests')
    .option('--plan-only', 'show plans, apply nothing')
    .option('--interval <seconds>', 're-plan periodically to report drift made outside the manifests')
    .option('--repair', 'with --interval: undo drift instead of reporting it')
    .addOption(parallelismOption())
    .option('--debounce <ms>', 'quiet time after the last save before a run', '50')
    .addOption(lockTimeoutOption())
    .addOption(strictOption()),
).action(async (dir, flags) => (await import('./commands/watch.js')).watch(stdio, dir, flags));

const lock = program.command('lock').description('stack locks: who is applying a stack, and releasing a lock left behind');
targetOptions(
  lock
    .command('status [dir]')
    .description('show the lock of the stack of DIR (or --stack), or every live lock of the account')
    .addOption(stackOption())
    .addOption(envOption())
    .option('--json', 'print the locks as a JSON array'),
).action(async (dir, flags) => (await import('./commands/lock.js')).lockStatus(stdio, dir, flags));
targetOptions(
  lock
    .command('release [dir]')
    .description('release the stack\'s lock (one left by an apply of yours that was killed; --force for anyone\'s)')
    .addOption(stackOption())
    .addOption(envOption())
    .option('--force', 'release it whoever holds it (make sure the apply or watch holding it is no longer running)'),
).action(async (dir, flags) => (await import('./commands/lock.js')).lockRelease(stdio, dir, flags));

targetOptions(
  program
    .command('agent')
    .description('keep stacks equal to Git: fetch, plan, apply on each new commit, check drift on an interval, record every sync')
    .option('--config <file>', 'agent.yaml: sources, stacks and their settings (docs/agent.md)')
    .option('--repo <url|path>', 'the Git repository of the one source (without --config)')
    .option('--ref <branch|tag>', 'its branch or tag (default HEAD: the repository\'s default branch)')
    .option('--path <dir>', 'a stack folder in it, or a folder of stack folders (default: its root)')
    .option('--interval <duration>', 'how often it is fetched (default 1m)')
    .option('--drift-interval <duration>', 'how often the live state is checked for drift (default 5m)')
    .option('--mode <mode>', 'apply: make the live state the commit\'s; plan: only report (default apply)')
    .option('--drift <what>', 'report or repair drift found by the check (default report)')
    .option('--port <n>', 'the agent\'s port: /healthz, /readyz, /metrics, POST /hooks/git (default 8090; 0: any)')
    .option('--host <h>', 'the address it listens on (default 127.0.0.1)')
    .option('--webhook-secret-env <name>', 'the environment variable holding the push webhook\'s secret')
    .option('--work-dir <dir>', 'where sources are fetched to (default: a temporary folder)'),
).action(async (flags) => (await import('./commands/agent.js')).agent(stdio, flags));
targetOptions(
  program
    .command('status [stack]')
    .description('the sync record: each stack\'s status (synced, out_of_sync, failed, unknown), live commit, last run, drift and lock')
    .option('--json', 'print the summaries (one stack: its summary) as JSON'),
).action(async (stack, flags) => (await import('./commands/sync-record.js')).status(stdio, stack, flags));
targetOptions(
  program
    .command('history <stack>')
    .description('the stack\'s runs (agent syncs, CLI applies and destroys), newest first')
    .option('--limit <n>', 'at most this many runs', '20')
    .option('--json', 'print the runs as a JSON array'),
).action(async (stack, flags) => (await import('./commands/sync-record.js')).history(stdio, stack, flags));
targetOptions(
  program
    .command('sync <stack>')
    .description('ask the agents that sync the stack for a sync now (through the service)')
    .option('--json', 'print the stack\'s summary as JSON'),
).action(async (stack, flags) => (await import('./commands/sync-record.js')).sync(stdio, stack, flags));

targetOptions(
  program
    .command('export')
    .description('write the live objects as manifests (one file per kind; references by name, secrets from the environment)')
    .option('--out <dir>', 'write files into this directory (default: print to stdout)')
    .option('--stack <name>', 'stack whose objects to export (default: stack: in <dir>/edgeplane.yaml, else "default")')
    .option('--all', 'also export objects no stack manages (to adopt them with `plan --adopt`)')
    .option('--force', 'write into --out even if it already holds manifests (overwrites the files export writes)')
    .addOption(new Option('--env <name>', 'export the stack of this environment of edgeplane.yaml, its values written back as ${var.NAME} / {var: NAME} where the live values hold them').env('EDGEPLANE_ENV'))
    .addOption(new Option('--as-variable <FIELD=NAME[=VALUE]>', 'write this field as the variable NAME: [Kind[/name].]field[.field…]=NAME[=VALUE], e.g. hostports=domain=shop.example.com (the part that is VALUE, as ${var.domain}) or HTTPSEdge/web.hostports=web_hosts (the whole field); repeatable')
      .argParser((v: string, all: string[] = []) => [...all, v])),
).action(async (flags) => (await import('./commands/export.js')).exportCmd(stdio, flags));

const admin = program.command('admin').description('operator commands: accounts, API keys, secrets, abuse reports, application users');
const accounts = admin.command('accounts').description('accounts');
accounts
  .command('create')
  .description('create an account and its first API key (printed once)')
  .requiredOption('--name <name>', 'account name')
  .option('--abuse-reports', 'authorize the account for abuse reports')
  .option('--scope <scope>', 'the first key\'s scope: read, write or admin (docs/api.md, "Scopes")', 'write')
  .option('--json', 'print {"account_id", "api_key", "key_id", "scope"}')
  .addOption(stateOption())
  .action(async (flags) => (await import('./commands/admin.js')).accountsCreate(stdio, flags));
accounts
  .command('update <account_id>')
  .description('change an account: authorize it for abuse reports, or take that away')
  .option('--abuse-reports', 'authorize the account for abuse reports')
  .option('--no-abuse-reports', 'take the authorization away')
  .addOption(stateOption())
  .action(async (accountId, flags) => (await import('./commands/admin.js')).accountsUpdate(stdio, accountId, flags));
accounts
  .command('list')
  .description('list the accounts, oldest first, with their number of active API keys')
  .option('--json', 'print [{"id", "name", "abuse_reports", "created_at", "active_keys"}]')
  .addOption(stateOption())
  .action(async (flags) => (await import('./commands/admin.js')).accountsList(stdio, flags));

const keys = admin.command('keys').description('API keys');
keys
  .command('create')
  .description('issue another API key for an account (printed once)')
  .requiredOption('--account <id>', 'account id')
  .option('--scope <scope>', 'read (plan, list, get), write (also apply, locks, syncs) or admin (write, and admin routes to come)', 'write')
  .option('--stacks <a,b>', 'write only objects whose ownership marker names one of these stacks, and take only their locks')
  .option('--json', 'print {"account_id", "api_key", "key_id", "scope", "stacks"}')
  .addOption(stateOption())
  .action(async (flags) => (await import('./commands/admin.js')).keysCreate(stdio, flags));
keys
  .command('list')
  .description('list an account\'s API keys: ids, scopes and dates (a key itself is shown only when issued)')
  .requiredOption('--account <id>', 'account id')
  .option('--json', 'print [{"id", "scope", "stacks", "created_at", "revoked_at"}]')
  .addOption(stateOption())
  .action(async (flags) => (await import('./commands/admin.js')).keysList(stdio, flags));
keys
  .command('revoke <key_id>')
  .description('revoke an API key')
  .addOption(stateOption())
  .action(async (keyId, flags) => (await import('./commands/admin.js')).keysRevoke(stdio, keyId, flags));

const secrets = admin.command('secrets').description('secrets sealed at rest: their keys, and rotation to the newest key');
secrets
  .command('status')
  .description('count the sealed values per key id (and any still in plain text)')
  .option('--json', 'print {"keys": [{"key_id", "values", "in_ring", "newest"}], "plain"}')
  .addOption(stateOption())
  .action(async (flags) => (await import('./commands/admin-secrets.js')).secretsStatusCommand(stdio, flags));
secrets
  .command('rotate')
  .description('re-seal every value under the newest key of EDGEPLANE_SECRETS_KEYS, in batches, while the service runs; resumable')
  .option('--batch <n>', 'objects per transaction', '200')
  .option('--json', 'print {"key_id", "objects", "remaining", "refused"}')
  .addOption(stateOption())
  .action(async (flags) => (await import('./commands/admin-secrets.js')).secretsRotateCommand(stdio, flags));

const abuse = admin.command('abuse').description('abuse reports: review them and decide on their hostnames');
abuse
  .command('list')
  .description('list abuse reports of every account, oldest first')
  .option('--status <status>', 'only reports with this status: PENDING, PARTIALLY_PROCESSED, PROCESSED')
  .option('--limit <n>', 'at most this many reports', '1000')
  .option('--json', 'print the reports as a JSON array')
  .addOption(stateOption())
  .action(async (flags) => (await import('./commands/admin-abuse.js')).abuseList(stdio, flags));
abuse
  .command('decide <report_id> <hostname>')
  .description('decide on a hostname of a report: --ban (no edge may add it), --unban (lift the ban) or --ignore')
  .option('--ban', 'ban the hostname service-wide')
  .option('--unban', 'lift the ban')
  .option('--ignore', 'take no action')
  .option('--json', 'print the decision and the report as JSON')
  .addOption(stateOption())
  .action(async (reportId, hostname, flags) => (await import('./commands/admin-abuse.js')).abuseDecide(stdio, reportId, hostname, flags));

const users = admin.command('users').description('application users (end users who signed in through an edge)');
users
  .command('record')
  .description('record a sign-in: create the user, or update the one with this provider URL and provider user id')
  .requiredOption('--account <id>', 'account id')
  .requiredOption('--provider-name <name>', 'identity provider name, e.g. Google')
  .requiredOption('--provider-url <url>', 'identity provider URL, e.g. https://accounts.google.com')
  .requiredOption('--provider-user-id <id>', 'the user id at the provider')
  .option('--username <username>')
  .option('--email <email>')
  .option('--name <name>', 'the user\'s common name')
  .option('--at <time>', 'time of the sign-in, RFC 3339 (default now)')
  .option('--json', 'print {"outcome", "application_user"}')
  .addOption(stateOption())
  .action(async (flags) => (await import('./commands/admin-users.js')).usersRecord(stdio, flags));
users
  .command('import <file>')
  .description('record many users from a JSON array; all are checked before any is written')
  .option('--account <id>', 'account of the entries that have no account_id')
  .option('--json', 'print {"created", "updated", "unchanged"}')
  .addOption(stateOption())
  .action(async (file, flags) => (await import('./commands/admin-users.js')).usersImport(stdio, file, flags));

program
  .command('completion')
  .addArgument(new Argument('<shell>', 'the shell the script is for').choices(SHELLS))
  .description(`print a shell completion script (${SHELLS.join(', ')}), made from this command table`)
  // commander refuses a shell not in the choices (exit 1) before the action runs.
  .action((shell: Shell) => stdio.write!(completionScript(program, shell)));

// Last: every command above, however added, ends its help with examples and exit codes.
addHelpEpilogues(program);

/** Runs the command line (bin/edgeplane.js); the table above is importable without running anything. */
export async function run(argv: string[]): Promise<void> {
  // A reader that stopped reading (`edgeplane plan | head`): the rest of the output is dropped and
  // the command carries on to its end and its exit code (an apply is not cut short halfway).
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
    });
  }
  // `help lock status` as `lock status --help`: commander's help command reads one level only.
  const words = argv.slice(2);
  if (words[0] === 'help' && words.length > 2 && words.slice(1).every((w) => !w.startsWith('-'))) argv = [...argv.slice(0, 2), ...words.slice(1), '--help'];
  // `help help`: commander's help command is not a command it can describe (it printed the main help and exited 1).
  else if (words[0] === 'help' && words[1] === 'help' && words.length === 2) argv = [...argv.slice(0, 2), '--help'];
  try {
    await program.parseAsync(argv);
  } catch (err) {
    const e = err as { code?: string; exitCode?: number; message?: string };
    if (err instanceof Error && err.name === 'StackFileError') {
      // An edgeplane.yaml's problems (reconciler/manifests/config.ts), one a line as validate prints them.
      for (const line of err.message.split('\n')) stdio.error(line);
      process.exitCode = 1;
    } else if (err instanceof CliExit) {
      if (err.message) stdio.error(err.message);
      process.exitCode = err.code;
    } else if (typeof e.code === 'string' && e.code.startsWith('commander.')) {
      process.exitCode = e.exitCode ?? 1;
    } else {
      stdio.error(`edgeplane: ${e.message ?? String(err)}`);
      if (process.env.EDGEPLANE_DEBUG) console.error(err);
      process.exitCode = 1;
    }
  } finally {
    // A new state directory claimed as the command started and never opened: given back.
    await abandonClaim();
  }
}

// Run as the program itself (the sources through tsx, as tests and the dev loop do), the command
// line is run here; imported (bin/edgeplane.js, tests reading the table), the importer calls `run`.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await run(process.argv);
