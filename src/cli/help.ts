import type { Command } from 'commander';
import { EXIT } from './exit.js';

/** What a command's help ends with: examples (a command line and what it does) and its exit codes. */
export interface CommandHelp {
  examples: [command: string, what: string][];
  /** Exit code → when. Absent: 0 done, 1 anything went wrong. */
  exits?: Partial<Record<number, string>>;
}

const DEFAULT_EXITS = { [EXIT.ok]: 'done', [EXIT.error]: 'an error (said on stderr)' };

/**
 * Examples and exit codes of each command, by its path in the command table (`plan`,
 * `admin keys create`). A command added to the table without an entry here still gets both
 * sections (its usage line as the example, exit codes 0 and 1): `addHelpEpilogues` walks the
 * whole table. Exit codes are the CLI contract of docs/reconciler.md (`EXIT`).
 */
export const COMMAND_HELP: Record<string, CommandHelp> = {
  '': {
    examples: [
      ['edgeplane init edge', 'make a stack in ./edge: edgeplane.yaml, a commented manifest, .gitignore, editor settings'],
      ['edgeplane validate edge', 'check the manifests (no service needed)'],
      ['edgeplane plan edge', 'what apply would change, against the embedded database in ./state'],
      ['edgeplane apply edge', 'make it so (asks first on a terminal)'],
      ['edgeplane <command> --help', 'the options, examples and exit codes of a command'],
    ],
    exits: { [EXIT.ok]: 'done', [EXIT.error]: 'an error', [EXIT.changes]: 'plan --detailed-exitcode: the plan has changes', [EXIT.blocked]: 'plan or apply: blocked by the safety threshold, a protected object or a policy', [EXIT.stale]: 'apply --plan: the saved plan is stale', [EXIT.locked]: 'apply, destroy, watch, lock release: the stack\'s lock is another\'s (or, embedded, the state directory)' },
  },
  init: {
    examples: [
      ['edgeplane init', 'a stack in the working directory, named after it'],
      ['edgeplane init edge --stack shop', 'a stack named "shop" in ./edge'],
    ],
    exits: { [EXIT.ok]: 'the stack was written', [EXIT.error]: 'the directory already holds a stack (nothing written) or cannot be written' },
  },
  validate: {
    examples: [
      ['edgeplane validate edge', 'every problem of every file, with file:line:col (secrets read from the environment)'],
      ['edgeplane validate edge/https-edge.yaml', 'one file, checked with the rest of its directory'],
      ['edgeplane validate edge --allow-missing-secrets --json', 'in a job that has no secrets: the rest, as JSON'],
    ],
    exits: { [EXIT.ok]: 'valid (warnings allowed)', [EXIT.error]: 'problems found (each on stderr; --json: on stdout)' },
  },
  'diff-env': {
    examples: [
      ['edgeplane diff-env staging production shop', 'what production changes against staging, object by object and field by field'],
      ['edgeplane diff-env staging production shop --markdown > promote.md', 'the same for a pull-request comment'],
    ],
    exits: { [EXIT.ok]: 'compared', [EXIT.error]: 'an environment is unknown, or the manifests do not validate in one', [EXIT.changes]: 'with --detailed-exitcode: the environments differ' },
  },
  plan: {
    examples: [
      ['edgeplane plan edge', 'against the embedded database in ./state (not made when missing: planned against an empty one)'],
      ['edgeplane plan edge --api-url https://api.example.com --markdown > plan.md', 'against a deployment (key in EDGEPLANE_API_KEY), for a pull-request comment'],
      ['edgeplane plan edge --out plan.json', 'save it for `apply --plan plan.json`'],
      ['edgeplane plan edge --detailed-exitcode --quiet', 'drift check in a script: exit 2 when anything differs'],
      ['edgeplane plan edge --override-policy cap-edge-deletes --reason "retiring eu-west"', 'a policy\'s denial let through, the reason shown in the plan'],
      ['edgeplane plan shop --env production', 'one environment of edgeplane.yaml: its stack, values and overlays'],
      ['edgeplane plan shop --env all --markdown > plan.md', 'every environment in one comment, a section each (exit code: the highest)'],
    ],
    exits: {
      [EXIT.ok]: 'planned (no changes, or changes without --detailed-exitcode)',
      [EXIT.error]: 'invalid manifests, conflicts with objects this stack does not own, or the API could not be read',
      [EXIT.changes]: 'with --detailed-exitcode: the plan has changes',
      [EXIT.blocked]: 'the plan exceeds the safety threshold (apply would need --force), or a policy denies it (--override-policy)',
    },
  },
  apply: {
    examples: [
      ['edgeplane apply edge', 'plan, show, ask "yes", apply'],
      ['edgeplane apply edge --auto-approve --api-url https://api.example.com', 'in CI, after review'],
      ['edgeplane apply --plan plan.json', 'exactly the saved plan, refused if the live state moved since'],
      ['edgeplane apply edge --override-policy admin-paths-need-auth --reason "INC-42"', 'go ahead although the policy denies; the sync record keeps the reason'],
    ],
    exits: {
      [EXIT.ok]: 'applied (or nothing to do)',
      [EXIT.error]: 'invalid manifests, conflicts, a step failed, or cancelled',
      [EXIT.blocked]: 'blocked by the safety threshold (review, then --force), or by a policy that denies (--override-policy NAME --reason TEXT)',
      [EXIT.stale]: 'with --plan: the live state changed since the plan was made; plan again',
      [EXIT.locked]: 'the stack\'s lock (or, embedded, the state directory) stayed another command\'s for --lock-timeout',
    },
  },
  graph: {
    examples: [
      ['edgeplane graph edge > graph.md', 'the objects and their references as a Mermaid chart (GitHub renders it in Markdown)'],
      ['edgeplane graph edge --target HTTPSEdge/web', 'one edge, its routes and what they use (a chart GitHub renders: at most 500 arrows)'],
      ['edgeplane graph edge --format dot | dot -Tsvg > graph.svg', 'as Graphviz DOT, for a large stack'],
    ],
    exits: { [EXIT.ok]: 'the chart was printed (a warning on stderr when GitHub would not render it)', [EXIT.error]: 'invalid manifests, or a --target that names nothing' },
  },
  destroy: {
    examples: [
      ['edgeplane destroy edge', 'show what would be deleted, ask "yes", delete every object the stack owns'],
      ['edgeplane destroy edge --auto-approve --api-url https://api.example.com', 'in CI, after review (key in EDGEPLANE_API_KEY)'],
      ['edgeplane destroy edge --target HTTPSEdge/staging', 'one object and what depends on it'],
      ['edgeplane plan edge --destroy', 'only see what destroy would delete'],
    ],
    exits: {
      [EXIT.ok]: 'destroyed (or nothing to destroy)',
      [EXIT.error]: 'a step failed, or cancelled',
      [EXIT.blocked]: 'a protected object would be deleted (see --allow-protected-changes)',
      [EXIT.locked]: 'the stack\'s lock (or, embedded, the state directory) stayed another command\'s for --lock-timeout',
    },
  },
  lock: {
    examples: [
      ['edgeplane lock status', 'every live stack lock of the account'],
      ['edgeplane lock release edge', 'free the lock an apply killed on this machine left behind'],
    ],
  },
  'policy test': {
    examples: [
      ['edgeplane policy test policies/', 'each policy against its own pass and fail examples'],
      ['edgeplane policy test examples/policies --json', 'the starter set, every result as JSON'],
    ],
    exits: { [EXIT.ok]: 'every policy loads and every example comes out as it says', [EXIT.error]: 'a policy does not load (file:line:col), or an example comes out otherwise' },
  },
  policy: { examples: [['edgeplane policy test policies/', 'check the policies against their examples']] },
  'lock status': {
    examples: [
      ['edgeplane lock status edge', 'the lock of the stack of ./edge: who holds it, since when'],
      ['edgeplane lock status --json', 'every live lock, as JSON'],
    ],
    exits: { [EXIT.ok]: 'shown (locked or not)', [EXIT.error]: 'the API could not be read' },
  },
  'lock release': {
    examples: [
      ['edgeplane lock release edge', 'release the stack\'s lock if this user left it here and its process is gone'],
      ['edgeplane lock release --stack shop --force', 'release anyone\'s lock (make sure no apply runs)'],
    ],
    exits: {
      [EXIT.ok]: 'released (or not locked)',
      [EXIT.error]: 'the API could not be read',
      [EXIT.locked]: 'without --force: the lock is another\'s, or its process still runs',
    },
  },
  watch: {
    examples: [
      ['edgeplane watch edge', 'apply creates and updates on every save (Ctrl-C stops)'],
      ['edgeplane watch edge --prune --interval 60', 'deletions too, and a drift check every minute'],
      ['edgeplane watch edge --plan-only', 'show each save\'s plan, apply nothing'],
    ],
    exits: {
      [EXIT.ok]: 'stopped (Ctrl-C or SIGTERM)',
      [EXIT.error]: 'could not start (bad options, no manifests)',
      [EXIT.locked]: 'the stack\'s lock (or, embedded, the state directory) stayed another command\'s for --lock-timeout, or the lock was lost',
    },
  },
  export: {
    examples: [
      ['edgeplane export', 'the stack\'s live objects as manifests, on stdout'],
      ['edgeplane export --stack shop --out edge', 'one file per kind in ./edge, with an edgeplane.yaml'],
      ['edgeplane export --all --out adopted', 'unmanaged objects too, to take over with `plan --adopt`'],
      ['edgeplane export --env production', 'production\'s stack, its values written back as ${var.NAME} / {var: NAME}'],
      ['edgeplane export --as-variable hostports=domain=shop.example.com', 'each hostport\'s shop.example.com written as ${var.domain}'],
    ],
    exits: { [EXIT.ok]: 'exported (or nothing there to export: said on stderr)', [EXIT.error]: 'the API could not be read, --out holds manifests already, or an --as-variable cannot be written (objects that disagree)' },
  },
  agent: {
    examples: [
      ['edgeplane agent --repo https://github.com/acme/edge.git --ref main --path edge', 'apply each new commit of main\'s edge/, check drift every 5 minutes'],
      ['edgeplane agent --config agent.yaml', 'several sources and stacks, as agent.yaml says (docs/agent.md)'],
      ['edgeplane agent --repo . --mode plan --drift-interval 1m', 'only report: plans and drift, nothing applied'],
    ],
    exits: { [EXIT.ok]: 'stopped by SIGTERM or SIGINT (the sync in flight finished)', [EXIT.error]: 'could not start (bad options or agent.yaml, port in use)' },
  },
  status: {
    examples: [
      ['edgeplane status', 'every stack: synced, out_of_sync, failed or unknown, its live commit and last run'],
      ['edgeplane status shop --json', 'one stack\'s summary, as JSON'],
    ],
    exits: { [EXIT.ok]: 'shown (a stack with no run yet says so)', [EXIT.error]: 'the API could not be read' },
  },
  history: {
    examples: [
      ['edgeplane history shop', 'the stack\'s last 20 runs (agent syncs, CLI applies and destroys), newest first'],
      ['edgeplane history shop --limit 100 --json', 'more, as JSON'],
    ],
    exits: { [EXIT.ok]: 'shown', [EXIT.error]: 'the API could not be read, or a bad --limit' },
  },
  sync: {
    examples: [
      ['edgeplane sync shop', 'ask the agents that sync the stack to fetch and sync it now'],
      ['edgeplane sync shop --json', 'the stack\'s summary after asking, as JSON'],
    ],
    exits: { [EXIT.ok]: 'asked', [EXIT.error]: 'the API could not be read, or not a stack name' },
  },
  serve: {
    examples: [
      ['edgeplane serve', 'the API on 127.0.0.1:8080, on the embedded database in ./state'],
      ['DATABASE_URL=postgres://… edgeplane serve --host 0.0.0.0 --port 8443 --tls-cert cert.pem --tls-key key.pem', 'on PostgreSQL, over HTTPS (or plain HTTP behind a proxy that terminates TLS)'],
    ],
    exits: { [EXIT.ok]: 'stopped by SIGTERM or SIGINT', [EXIT.error]: 'could not start (port in use, database unreachable)' },
  },
  completion: {
    examples: [
      ['source <(edgeplane completion bash)', 'bash, for this shell (add it to ~/.bashrc to keep it)'],
      ['source <(edgeplane completion zsh)', 'zsh (in ~/.zshrc, after compinit)'],
      ['edgeplane completion fish > ~/.config/fish/completions/edgeplane.fish', 'fish'],
    ],
    exits: { [EXIT.ok]: 'the script was printed', [EXIT.error]: 'an unknown shell' },
  },
  admin: { examples: [['edgeplane admin accounts create --name acme', 'an account and its first API key']] },
  'admin accounts': { examples: [['edgeplane admin accounts list', 'every account, oldest first']] },
  'admin accounts create': { examples: [['edgeplane admin accounts create --name acme --json', 'the key is printed once: keep it']] },
  'admin accounts update': { examples: [['edgeplane admin accounts update acct_… --abuse-reports', 'allow the account to file abuse reports']] },
  'admin accounts list': { examples: [['edgeplane admin accounts list --json', 'as JSON']] },
  'admin keys': { examples: [['edgeplane admin keys list --account acct_…', 'an account\'s keys']] },
  'admin keys create': { examples: [['edgeplane admin keys create --account acct_…', 'another key (printed once)'], ['edgeplane admin keys create --account acct_… --scope read', 'a key that can only read: for plan jobs of pull requests'], ['edgeplane admin keys create --account acct_… --stacks web,api', 'a key that writes only the web and api stacks']] },
  'admin keys list': { examples: [['edgeplane admin keys list --account acct_… --json', 'ids and dates, as JSON']] },
  'admin keys revoke': { examples: [['edgeplane admin keys revoke key_…', 'the key stops working at once']] },
  'admin secrets': { examples: [['edgeplane admin secrets status', 'sealed values per key id']] },
  'admin secrets status': { examples: [['edgeplane admin secrets status --json', 'as JSON']] },
  'admin secrets rotate': { examples: [['EDGEPLANE_SECRETS_KEYS=/etc/edgeplane/keys edgeplane admin secrets rotate', 're-seal under the first key of the file; run again if interrupted']] },
  'admin abuse': { examples: [['edgeplane admin abuse list --status PENDING', 'reports waiting for a decision']] },
  'admin abuse list': { examples: [['edgeplane admin abuse list --status PENDING --json', 'as JSON']] },
  'admin abuse decide': { examples: [['edgeplane admin abuse decide abrp_… shop.example.com --ban', 'no edge may add the hostname']] },
  'admin users': { examples: [['edgeplane admin users import users.json --account acct_…', 'record many sign-ins']] },
  'admin users record': { examples: [['edgeplane admin users record --account acct_… --provider-name Google --provider-url https://accounts.google.com --provider-user-id 123', 'one sign-in']] },
  'admin users import': { examples: [['edgeplane admin users import users.json --account acct_…', 'all checked before any is written']] },
};

/** The command's path in the table, without the program's name (`admin keys create`). */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** The epilogue of one command's help. */
export function helpEpilogue(cmd: Command): string {
  const path = commandPath(cmd);
  const own = COMMAND_HELP[path];
  const usage = `edgeplane ${path ? path + ' ' : ''}${cmd.usage()}`.replace(/ \[options\]/, '').trim();
  const examples = own?.examples ?? [[usage, cmd.description()]];
  const exits = own?.exits ?? DEFAULT_EXITS;
  const width = Math.max(...examples.map(([c]) => c.length));
  // One layout for all: a comment beside each command when every line fits 100 columns, else under it.
  const beside = examples.every(([, what]) => width + what.length + 8 <= 100);
  const lines = ['', 'Examples:'];
  for (const [c, what] of examples) lines.push(beside ? `  $ ${c.padEnd(width)}  # ${what}` : `  $ ${c}\n      # ${what}`);
  lines.push('', 'Exit codes:');
  for (const [code, when] of Object.entries(exits)) lines.push(`  ${code}  ${when}`);
  return lines.join('\n') + '\n';
}

/** Gives every command of the table (subcommands too, however added) its examples and exit codes. */
export function addHelpEpilogues(program: Command): void {
  const walk = (c: Command) => {
    c.addHelpText('after', () => helpEpilogue(c));
    c.commands.forEach(walk);
  };
  walk(program);
}
