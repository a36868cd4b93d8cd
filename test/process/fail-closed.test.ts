import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { validate } from '../../src/cli/commands/validate.js';
import { completionScript } from '../../src/cli/completion.js';
import { COMMAND_HELP, commandPath } from '../../src/cli/help.js';
import { program } from '../../src/cli/main.js';
import { cliSettings, useColor } from '../../src/cli/output.js';
import { capture, exitCode } from '../helpers/capture.js';
import { runCli } from '../helpers/cli.js';
import { cleanupDirs, EXAMPLES, manifestDir, tempDir } from '../helpers/reconcile.js';

afterAll(cleanupDirs);

const ANSI = /\x1b\[[0-9;]*m/;

// Each test works in directories of its own: they run at the same time, each running its
// `edgeplane` processes one after another (which leaves a core idle).
describe('a new stack, as a new user makes it', { timeout: 240_000, concurrent: true }, () => {
  it('init scaffolds a stack that validates and plans; read-only commands make no state directory, writing ones make it with a .gitignore and say so; export writes modelines that resolve', async () => {
    const work = tempDir('ep-new-');
    const init = await runCli(['init', 'shop'], { cwd: work });
    expect(init.code, init.stderr).toBe(0);
    expect(init.stderr).toMatch(/initialised stack "shop" in shop: edgeplane.yaml, https-edge.yaml, .gitignore, .vscode\/settings.json/);
    const stack = join(work, 'shop');
    expect(readFileSync(join(stack, '.gitignore'), 'utf8')).toMatch(/^state\/$/m);
    const settings = JSON.parse(readFileSync(join(stack, '.vscode', 'settings.json'), 'utf8')) as { 'yaml.schemas': Record<string, string[]> };
    for (const schema of Object.keys(settings['yaml.schemas'])) expect(existsSync(schema), schema).toBe(true);
    expect((await runCli(['init', 'shop'], { cwd: work })).stderr).toMatch(/already holds a stack .*nothing written/);
    // The next step can be pasted as printed, whatever the directory is called; editor settings
    // that are not a mapping of schemas are left as they are.
    const other = tempDir('ep-new-');
    mkdirSync(join(other, "Bob's shop", '.vscode'), { recursive: true });
    writeFileSync(join(other, "Bob's shop", '.vscode', 'settings.json'), '{"yaml.schemas": "mine"}\n');
    const odd = await runCli(['init', "Bob's shop"], { cwd: other });
    expect(odd.code, odd.stderr).toBe(0);
    expect(odd.stdout).toContain(`next: edgeplane validate 'Bob'\\''s shop' && edgeplane plan 'Bob'\\''s shop'`);
    expect(execFileSync('sh', ['-c', odd.stdout.trim().replace(/^next: /, '').replace(/edgeplane/g, 'echo')], { cwd: other, encoding: 'utf8' })).toBe("validate Bob's shop\nplan Bob's shop\n");
    expect(readFileSync(join(other, "Bob's shop", '.vscode', 'settings.json'), 'utf8')).toBe('{"yaml.schemas": "mine"}\n');

    // plan in a working directory with no ./state: planned against an empty database, and nothing made.
    const colour = await runCli(['plan', 'shop'], { cwd: work, env: { NO_COLOR: undefined, FORCE_COLOR: '1' } });
    expect(colour.code, colour.stderr).toBe(0);
    expect(colour.stderr).toContain('no embedded state at ./state: planning against an empty database');
    expect(colour.stdout).toMatch(/\+ create HTTPSEdge\/web/);
    expect(colour.stdout).toMatch(ANSI);
    expect(readdirSync(work)).toEqual(['shop']);
    const plain = await runCli(['plan', 'shop', '--no-color', '--quiet'], { cwd: work, env: { NO_COLOR: undefined, FORCE_COLOR: '1' } });
    expect(plain.stdout).toMatch(/\+ create HTTPSEdge\/web/);
    expect(plain.stdout).not.toMatch(ANSI);
    expect(plain.stderr).toBe('');

    const apply = await runCli(['apply', 'shop', '--auto-approve', '--state', 'db'], { cwd: work });
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stderr.split('\n').filter((l) => l.includes('created the embedded state directory'))).toEqual(['created the embedded state directory ./db (its .gitignore keeps the database out of Git)']);
    expect(readFileSync(join(work, 'db', '.gitignore'), 'utf8')).toMatch(/^\*$/m);
    // Git itself keeps it out.
    execFileSync('git', ['init', '-q', work]);
    expect(execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: work, encoding: 'utf8' })).not.toContain('db/');

    const exported = await runCli(['export', '--state', 'db', '--stack', 'shop', '--out', 'copy'], { cwd: work });
    expect(exported.code, exported.stderr).toBe(0);
    const file = readFileSync(join(work, 'copy', 'https-edge.yaml'), 'utf8');
    const schema = /^# yaml-language-server: \$schema=(\S+)$/m.exec(file)?.[1];
    expect(schema && existsSync(schema) && schema.startsWith('/'), file).toBe(true);
    expect(readFileSync(join(work, 'copy', 'edgeplane.yaml'), 'utf8')).toMatch(/^# yaml-language-server: \$schema=\/\S+stack\.schema\.json\nstack: shop\n/);
  });

  it('an apply that fails before it opens its new state directory leaves none behind (it is taken as the command starts); one that was there stays, free', async () => {
    const work = tempDir('ep-claim-');
    const stack = manifestDir({ 'a.yaml': 'kind: FailoverBackend\nname: a\nbackends: []\n' });
    for (const args of [['apply', join(work, 'nowhere'), '--auto-approve', '--state', 'db'], ['apply', '--auto-approve', '--state', 'db'], ['destroy', join(work, 'nowhere'), '--auto-approve', '--state', 'db']]) {
      const res = await runCli(args, { cwd: work });
      expect(res.code, res.stderr).toBe(1);
      expect(res.stderr).not.toContain('created the embedded state directory');
      expect(readdirSync(work), args.join(' ')).toEqual([]);
    }
    mkdirSync(join(work, 'mine'));
    writeFileSync(join(work, 'mine', 'notes.txt'), 'kept\n');
    const failed = await runCli(['apply', join(work, 'nowhere'), '--auto-approve', '--state', 'mine'], { cwd: work });
    expect(failed.code, failed.stderr).toBe(1);
    expect(readdirSync(join(work, 'mine'))).toEqual(['notes.txt']); // unlocked, and the database written meanwhile removed
    // The next apply on it works, and says nothing was created.
    const ok = await runCli(['apply', stack, '--auto-approve', '--state', 'mine'], { cwd: work });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).not.toContain('created the embedded state directory');
    expect((await runCli(['plan', stack, '--state', 'mine'], { cwd: work })).stdout).toContain('No changes');
  });

  it('the service started with the command reports what the command would: a refused setting, a damaged database', async () => {
    // The service's thread builds its app from the environment as the command starts, while the
    // command loads: a setting the command refuses is still the command's error, and nothing is left.
    const work = tempDir('ep-early-');
    const stack = manifestDir({ 'a.yaml': 'kind: FailoverBackend\nname: a\nbackends: []\n' });
    const refused = await runCli(['apply', stack, '--auto-approve', '--state', 'db'], { cwd: work, env: { EDGEPLANE_PUBLIC_URL: 'not a url' } });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('EDGEPLANE_PUBLIC_URL: must be an http:// or https:// URL');
    expect(readdirSync(work)).toEqual([]);
    // A database that cannot be opened: the engine's error, naming its directory (the app was built meanwhile).
    expect((await runCli(['apply', stack, '--auto-approve', '--state', 'db'], { cwd: work })).code).toBe(0);
    writeFileSync(join(work, 'db', 'pgdata', 'PG_VERSION'), 'garbage\n');
    for (const command of ['plan', 'apply']) {
      const damaged = await runCli([command, stack, '--auto-approve', '--state', 'db'].filter((a) => command === 'apply' || a !== '--auto-approve'), { cwd: work });
      expect(damaged.code, damaged.stderr).toBe(1);
      expect(damaged.stderr).toContain(`cannot open the embedded database in ${join(work, 'db', 'pgdata')}`);
    }
  });

  it('a typo in edgeplane.yaml stops plan before anything is read, at its place, with the key meant', async () => {
    const dir = manifestDir({ 'edgeplane.yaml': 'stak: shop\n', 'a.yaml': 'kind: FailoverBackend\nname: a\nbackends: []\n' });
    const res = await runCli(['plan', dir]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`${dir}/edgeplane.yaml:1:1: error: stak: is not a setting of edgeplane.yaml (did you mean "stack"?)`);
    // A YAML 1.1 merge key is named as one, as in manifests, not left to look like a typo.
    const merged = manifestDir({ 'edgeplane.yaml': 'base: &base { stack: shop }\n<<: *base\n', 'a.yaml': 'kind: FailoverBackend\nname: a\nbackends: []\n' });
    const mergeRes = await runCli(['plan', merged]);
    expect(mergeRes.code).toBe(1);
    expect(mergeRes.stderr).toContain(`${merged}/edgeplane.yaml:2:1: error: <<: is not a setting of edgeplane.yaml (YAML merge keys are YAML 1.1, and edgeplane.yaml is YAML 1.2: write the settings out)`);
  });
});

describe('validate is the whole truth', () => {
  const run = async (dir: string, flags: Parameters<typeof validate>[2] = {}) => {
    const out = capture();
    const code = await exitCode(() => validate(out, dir, flags));
    return { code, errors: out.errors, summary: out.lines.join('\n') };
  };

  it('missing secret environment variables are errors as in plan, unless --allow-missing-secrets', async () => {
    for (const k of Object.keys(process.env)) if (k.startsWith('SHOP_')) delete process.env[k];
    const strict = await run(join(EXAMPLES, 'full'));
    expect(strict.code).toBe(1);
    expect(strict.errors.filter((e) => e.includes('[secret-missing]'))).toHaveLength(3);
    expect(strict.errors.join('\n')).toMatch(/environment variable SHOP_OIDC_CLIENT_SECRET is not set/);
    const allowed = await run(join(EXAMPLES, 'full'), { allowMissingSecrets: true });
    expect(allowed.code).toBe(0);
    expect(allowed.summary).toMatch(/valid; 3 secrets not set here \(--allow-missing-secrets\)/);
  });

  it('every problem of every file in one run: a schema error does not hide a dangling reference elsewhere, nor a broken rule in another route, nor the stack file\'s', async () => {
    const dir = manifestDir({
      'edgeplane.yaml': 'stack: shop\nstak: x\n',
      'a.yaml': 'kind: CertificateAuthority\nname: root\nca_pem: 12\n',
      'b.yaml': 'kind: FailoverBackend\nname: fb\nbackends: [nowhere]\n',
      'c.yaml': [
        'kind: HTTPSEdge', 'name: web', 'hostports: ["a.example:443"]', 'routes:',
        '  - name: one', '    match_type: path_prefix', '    match: /', '    circuit_breaker: { num_buckets: 500 }',
        '  - name: two', '    match_type: path_prefix', '    match: /two', '    request_headers: { add: { "X Bad": "1" } }',
        '    webhook_verification: { provider: sns, secret: { env: NOPE } }', '',
      ].join('\n'),
    });
    const r = await run(dir, { allowMissingSecrets: true });
    expect(r.code).toBe(1);
    const rules = r.errors.map((e) => /^(\S+?):\d+:\d+: .*\[([a-z-]+)\]$/.exec(e)!.slice(1).join(' '));
    expect(rules).toEqual(expect.arrayContaining([
      expect.stringMatching(/edgeplane.yaml stack-file/),
      expect.stringMatching(/a.yaml schema/),
      expect.stringMatching(/b.yaml unknown-reference/),
      expect.stringMatching(/c.yaml schema/),
      expect.stringMatching(/c.yaml service-check/),
    ]));
    expect(r.errors.join('\n')).toMatch(/X Bad.*is not a valid HTTP header name/);
    expect(r.errors.join('\n')).toMatch(/provider sns takes no secret/);
  });
});

describe('CLI habits', () => {
  it('every command\'s help ends with examples and exit codes', () => {
    const all: typeof program[] = [];
    const walk = (c: typeof program) => { all.push(c); c.commands.forEach(walk); };
    walk(program);
    expect(all.length).toBeGreaterThan(15);
    for (const c of all) {
      let text = '';
      c.configureOutput({ writeOut: (s) => { text += s; }, writeErr: (s) => { text += s; } });
      c.outputHelp();
      // Real examples of its own, not the usage line the table falls back to.
      expect(Object.keys(COMMAND_HELP), `${commandPath(c)}: no examples in COMMAND_HELP (src/cli/help.ts)`).toContain(commandPath(c));
      expect(text, commandPath(c) || 'edgeplane').toMatch(/\nExamples:\n {2}\$ [^\n]*edgeplane[^\n]*\n[\s\S]*\nExit codes:\n {2}0 {2}\S[^\n]*\n {2}1 {2}\S[^\n]*\n( {2}\d {2}\S[^\n]*\n)*\n?$/);
    }
  });

  it('colour: --no-color, then NO_COLOR, then FORCE_COLOR, else a terminal', () => {
    const tty = true;
    expect(useColor({}, tty)).toBe(true);
    expect(useColor({}, false)).toBe(false);
    expect(useColor({ NO_COLOR: '1' }, tty)).toBe(false);
    expect(useColor({ NO_COLOR: '1', FORCE_COLOR: '1' }, tty)).toBe(false);
    expect(useColor({ FORCE_COLOR: '1' }, false)).toBe(true);
    expect(useColor({ FORCE_COLOR: '0' }, tty)).toBe(false);
    expect(useColor({ TERM: 'dumb' }, tty)).toBe(false);
    cliSettings.color = false;
    try {
      expect(useColor({ FORCE_COLOR: '1' }, tty)).toBe(false);
    } finally {
      delete cliSettings.color;
    }
  });

  it('the bash completion script loads in bash and completes commands, subcommands, options and files', () => {
    const script = join(tempDir('ep-comp-'), 'edgeplane.bash');
    writeFileSync(script, completionScript(program, 'bash'));
    const complete = (...words: string[]) => execFileSync('bash', ['--norc', '--noprofile', '-c', `
      source "$1" || exit 9; shift
      COMP_WORDS=("$@"); COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 )); _edgeplane; printf '%s\\n' "\${COMPREPLY[@]}"`, 'complete', script, 'edgeplane', ...words], { encoding: 'utf8', cwd: EXAMPLES }).trim().split('\n');
    expect(complete('')).toEqual(expect.arrayContaining(['plan', 'apply', 'validate', 'init', 'completion', 'admin']));
    expect(complete('pl')).toEqual(['plan']);
    expect(complete('admin', 'ke')).toEqual(['keys']);
    expect(complete('admin', 'keys', '')).toEqual(['create', 'list', 'revoke']);
    expect(complete('plan', '--det')).toEqual(['--detailed-exitcode']);
    expect(complete('plan', 'small', '--no-c')).toEqual(['--no-color']);
    expect(complete('plan', 'sm')).toEqual(['small']);
    expect(complete('plan', '--state', 'fu')).toEqual(['full']);
    // A fixed set of values is offered instead of file names; a file name with a space stays whole.
    expect(complete('completion', '')).toEqual(['bash', 'zsh', 'fish']);
    expect(complete('graph', '--format', '')).toEqual(['mermaid', 'dot']);
    const spaced = tempDir('ep-comp-');
    mkdirSync(join(spaced, 'My Project'));
    const inSpaced = (...words: string[]) => execFileSync('bash', ['--norc', '--noprofile', '-c', `
      source "$1" || exit 9; shift
      COMP_WORDS=("$@"); COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 )); _edgeplane; printf '%s\\n' "\${COMPREPLY[@]}"`, 'complete', script, 'edgeplane', ...words], { encoding: 'utf8', cwd: spaced }).trim().split('\n');
    expect(inSpaced('plan', 'My')).toEqual(['My Project']);
    expect(inSpaced('plan', '--state', 'My')).toEqual(['My Project']);
    expect(completionScript(program, 'fish')).toContain(`-a 'bash zsh fish'`);
    expect(completionScript(program, 'zsh')).toMatch(/bashcompinit[\s\S]*complete -F _edgeplane edgeplane/);
    expect(completionScript(program, 'fish')).toMatch(/complete -c edgeplane -n '__fish_use_subcommand' -a plan/);
  });
});
