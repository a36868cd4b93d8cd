// Helpers of the action's steps (action.yml): running edgeplane, GitHub's workflow commands, the
// job summary and step outputs, and the pull-request comment through GitHub's REST API. Node 20
// only, no dependencies: the steps run before (and apart from) any npm install.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';

/** An input as action.yml passes it (`INPUT_NAME`), trimmed; `fallback` when empty or unset. */
export function input(name, fallback = '') {
  const v = process.env[`INPUT_${name.toUpperCase().replace(/[- ]/g, '_')}`];
  return v === undefined || v.trim() === '' ? fallback : v.trim();
}

/** A boolean input: true, false (anything else is refused: a typo must not turn a check off). */
export function flag(name, fallback = false) {
  const v = input(name, String(fallback)).toLowerCase();
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new Error(`input ${name} must be true or false (got ${JSON.stringify(v)})`);
}

/** Extra words for the edgeplane command (`args` input): split on white space; quotes are not read. */
export function words(text) {
  return text.split(/\s+/).filter(Boolean);
}

/**
 * The edgeplane command: `EDGEPLANE_CLI` (a .js file run with this Node: a checkout's
 * bin/edgeplane.js, as the tests do), else `edgeplane` on the PATH (what the install step put there).
 */
function command() {
  const cli = process.env.EDGEPLANE_CLI;
  if (cli && /\.[cm]?js$/.test(cli)) return [process.execPath, [cli]];
  return [cli || 'edgeplane', []];
}

/**
 * Runs `edgeplane ARGS` and resolves with its exit code, stdout and stderr. What it prints is shown
 * in the log as it comes, between `::stop-commands::` lines: a manifest's text (a description, a
 * hostname) is never read by the runner as a workflow command.
 */
export function edgeplane(args, opts = {}) {
  const [cmd, pre] = command();
  const token = randomBytes(16).toString('hex');
  const log = opts.log ?? process.stdout;
  log.write(`::stop-commands::${token}\n`);
  return new Promise((done, fail) => {
    const child = spawn(cmd, [...pre, ...args], { env: { ...process.env, NO_COLOR: '1', ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; if (opts.echoStdout !== false) log.write(d); });
    child.stderr.on('data', (d) => { stderr += d; log.write(d); });
    child.on('error', fail);
    child.on('close', (code, signal) => {
      if (!/\n$/.test(stdout + stderr) && (stdout + stderr) !== '') log.write('\n');
      log.write(`::${token}::\n`);
      done({ code: code ?? 128, signal, stdout, stderr });
    });
  });
}

/** A workflow command's message: `%`, CR and LF escaped (GitHub's own escaping). */
function escapeData(s) {
  return String(s).replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** A workflow command's property: also `:` and `,`. */
function escapeProperty(s) {
  return escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

/** A path as annotations name it: relative to the repository's checkout (GITHUB_WORKSPACE), `/` separated. */
export function repoPath(file, workspace = process.env.GITHUB_WORKSPACE || process.cwd()) {
  const abs = resolve(process.cwd(), file);
  const rel = relative(workspace, abs);
  return (rel === '' || rel.startsWith('..') || isAbsolute(rel) ? abs : rel).split(sep).join('/');
}

/**
 * `validate --json` problems as annotations (`::error file=…,line=…,col=…,title=…::message`):
 * GitHub shows each on its line of the pull request's diff. At most `max` (GitHub shows 10 per step
 * and 50 per job); the rest are counted in one more.
 */
export function annotations(problems, opts = {}) {
  const max = opts.max ?? 50;
  const lines = problems.slice(0, max).map((p) => {
    const level = p.severity === 'warning' ? 'warning' : 'error';
    const props = [`file=${escapeProperty(repoPath(p.file, opts.workspace))}`, `line=${Number(p.line) || 1}`, `col=${Number(p.col) || 1}`, `title=${escapeProperty(`edgeplane: ${p.rule}`)}`];
    return `::${level} ${props.join(',')}::${escapeData(`${p.path ? `${p.path}: ` : ''}${p.message}`)}`;
  });
  if (problems.length > max) lines.push(`::error::${escapeData(`edgeplane: ${problems.length - max} more problems (edgeplane validate lists them all)`)}`);
  return lines;
}

/** Appends to a file the runner reads (GITHUB_STEP_SUMMARY, GITHUB_OUTPUT); nothing when it is not set. */
export function appendTo(variable, text) {
  const file = process.env[variable];
  if (file) appendFileSync(file, text.endsWith('\n') ? text : `${text}\n`);
}

/** A step output (`name=value`, one line). */
export function setOutput(name, value) {
  appendTo('GITHUB_OUTPUT', `${name}=${String(value).replace(/[\r\n]/g, ' ')}`);
}

/** GitHub caps a job summary at 1 MiB (bytes) per step: a plan is cut below that, saying so. */
export const SUMMARY_LIMIT = 1_000_000;

/** `text` within `limit` bytes of UTF-8, cut (never inside a character) and ended with `note` when longer. */
export function capped(text, limit, note) {
  if (Buffer.byteLength(text) <= limit) return text;
  const kept = Buffer.from(text).subarray(0, limit - Buffer.byteLength(note) - 4).toString('utf8').replace(/\uFFFD+$/, '');
  return `${kept}\n\n${note}\n`;
}

/** The run's page, for a comment or summary to link to (GITHUB_SERVER_URL, GITHUB_REPOSITORY, GITHUB_RUN_ID). */
export function runUrl(env = process.env) {
  const { GITHUB_SERVER_URL: server = 'https://github.com', GITHUB_REPOSITORY: repo, GITHUB_RUN_ID: run } = env;
  return repo && run ? `${server}/${repo}/actions/runs/${run}` : undefined;
}

/** The pull-request comment's marker (hidden in the rendered comment): one comment per stack directory, found again by it on every run. */
export function marker(dir) {
  return `<!-- edgeplane-plan dir=${dir.replace(/--/g, '-').replace(/>/g, '')} -->`;
}
