import { spawn } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, ROOT, runCli, startServe, type Served } from '../helpers/cli.js';
import { cleanupDirs, copyExample, editFile, tempDir } from '../helpers/reconcile.js';

/**
 * The GitHub Action (action.yml): its steps' scripts (action/*.mjs) run as the runner runs them,
 * against a real `edgeplane serve`, with a small stand-in for GitHub's issue-comments endpoints
 * (list, create, update): the one part of GitHub the steps call.
 */

interface Comment { id: number; issue?: number; body: string; user: { login: string }; html_url: string }
interface Issue { number: number; title: string; body: string; state: string; user: { login: string }; html_url: string; pull_request?: object }

/** GitHub's issues and comments API, as much as the action uses: a token is required, pages of `per_page`. */
function standInGitHub(token: string) {
  const comments: Comment[] = [];
  const issues: Issue[] = [];
  const calls: string[] = [];
  let next = 100;
  const body = (req: IncomingMessage) => new Promise<any>((r) => { let s = ''; req.on('data', (d) => (s += d)); req.on('end', () => r(s ? JSON.parse(s) : undefined)); });
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    calls.push(`${req.method} ${url.pathname}`);
    const send = (status: number, value: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(value)); };
    if (req.headers.authorization !== `Bearer ${token}`) return send(401, { message: 'Bad credentials' });
    const list = /^\/repos\/o\/r\/issues\/(\d+)\/comments$/.exec(url.pathname);
    const one = /^\/repos\/o\/r\/issues\/comments\/(\d+)$/.exec(url.pathname);
    const issue = /^\/repos\/o\/r\/issues\/(\d+)$/.exec(url.pathname);
    const per = Number(url.searchParams.get('per_page') ?? 30);
    const page = Number(url.searchParams.get('page') ?? 1);
    if (url.pathname === '/repos/o/r/issues' && req.method === 'GET') {
      const state = url.searchParams.get('state') ?? 'open';
      const creator = url.searchParams.get('creator');
      return send(200, issues.filter((i) => (state === 'all' || i.state === state) && (!creator || i.user.login === creator)).slice((page - 1) * per, page * per));
    }
    if (url.pathname === '/repos/o/r/issues' && req.method === 'POST') {
      const { title, body: text } = await body(req);
      const i = { number: next++, title, body: text, state: 'open', user: { login: 'github-actions[bot]' }, html_url: `https://github.example/o/r/issues/${next}` };
      issues.push(i);
      return send(201, i);
    }
    if (issue && req.method === 'PATCH') {
      const i = issues.find((x) => x.number === Number(issue[1]));
      if (!i) return send(404, { message: 'Not Found' });
      Object.assign(i, await body(req));
      return send(200, i);
    }
    if (list && req.method === 'GET') {
      return send(200, comments.filter((c) => c.issue === Number(list[1]) || c.issue === undefined).slice((page - 1) * per, page * per));
    }
    if (list && req.method === 'POST') {
      const c = { id: next++, issue: Number(list[1]), body: (await body(req)).body, user: { login: 'github-actions[bot]' }, html_url: `https://github.example/o/r/pull/${list[1]}#issuecomment-${next}` };
      comments.push(c);
      return send(201, c);
    }
    if (one && req.method === 'PATCH') {
      const c = comments.find((x) => x.id === Number(one[1]));
      if (!c) return send(404, { message: 'Not Found' });
      c.body = (await body(req)).body;
      return send(200, c);
    }
    send(404, { message: 'Not Found' });
  });
  return { server, comments, issues, calls };
}

let served: Served;
let key: string;
let gh: ReturnType<typeof standInGitHub>;
let ghUrl: string;

beforeAll(async () => {
  const state = tempDir('ep-action-state-');
  const created = await runCli(['admin', 'accounts', 'create', '--name', 'action', '--json', '--state', state]);
  key = JSON.parse(created.stdout).api_key;
  served = await startServe(['--state', state]);
  gh = standInGitHub('gh-token');
  await new Promise<void>((r) => gh.server.listen(0, '127.0.0.1', r));
  ghUrl = `http://127.0.0.1:${(gh.server.address() as AddressInfo).port}`;
}, 120_000);
afterAll(async () => {
  await served?.stop();
  await new Promise((r) => gh?.server.close(r));
  cleanupDirs();
});

/** A repository's checkout with the stack in edge/, and the files the runner gives each step. */
function workspace() {
  const ws = tempDir('ep-action-ws-');
  cpSync(copyExample('small'), join(ws, 'edge'), { recursive: true });
  const event = join(ws, '..', `${ws.split('/').pop()}-event.json`);
  writeFileSync(event, JSON.stringify({ pull_request: { number: 7, head: { sha: 'abcdef0123456789abcdef0123456789abcdef01' } } }));
  return { ws, event };
}

interface Step { code: number | null; stdout: string; outputs: Record<string, string>; summary: string }

/** Runs action/NAME.mjs as the runner runs the step: in the checkout, with its inputs as INPUT_* and the runner's files. */
function step(name: string, ws: string, event: string, env: Record<string, string> = {}): Promise<Step> {
  const runnerDir = tempDir('ep-action-runner-');
  const output = join(runnerDir, 'output');
  const summary = join(runnerDir, 'summary');
  writeFileSync(output, '');
  writeFileSync(summary, '');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'action', `${name}.mjs`)], {
      cwd: ws,
      env: cliEnv({
        GITHUB_ACTIONS: 'true', CI: 'true', GITHUB_WORKSPACE: ws, GITHUB_EVENT_PATH: event, GITHUB_EVENT_NAME: 'pull_request',
        GITHUB_REPOSITORY: 'o/r', GITHUB_API_URL: ghUrl, GITHUB_SERVER_URL: 'https://github.example', GITHUB_RUN_ID: '42',
        GITHUB_OUTPUT: output, GITHUB_STEP_SUMMARY: summary, RUNNER_TEMP: runnerDir,
        EDGEPLANE_CLI: join(ROOT, 'bin', 'edgeplane.js'), EDGEPLANE_API_URL: served.url, EDGEPLANE_API_KEY: key,
        INPUT_DIRECTORY: 'edge', ...env,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stdout += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const outputs = Object.fromEntries(readFileSync(output, 'utf8').split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      resolve({ code, stdout, outputs, summary: readFileSync(summary, 'utf8') });
    });
  });
}

describe('the action\'s steps', { timeout: 240_000 }, () => {
  it('plans a pull request into one comment, updated in place on a re-run, and the whole plan into the job summary; applies on the default branch', async () => {
    const { ws, event } = workspace();
    // Someone else's comment that starts with the same marker is never taken for the action's.
    gh.comments.push({ id: 1, body: '<!-- edgeplane-plan dir=edge -->\nnot mine', user: { login: 'mallory' }, html_url: '' });

    const planned = await step('plan', ws, event);
    expect(planned.code, planned.stdout).toBe(0);
    expect(planned.outputs).toMatchObject({ exitcode: '2', changes: 'true' });
    // The summary is the whole plan (--out-markdown): every create's name, not only the comment's share.
    expect(planned.summary).toContain('`small-example`');
    expect(planned.summary).toMatch(/5 to create/);
    for (const id of ['CertificateAuthority/clients', 'FailoverBackend/app', 'HTTPSEdge/web', 'HTTPSEdge/web/routes/site', 'HTTPSEdge/web/routes/api']) expect(planned.summary).toContain(id);
    // edgeplane's own output is shown with workflow commands off: a manifest's text cannot issue one.
    expect(planned.stdout).toMatch(/^::stop-commands::[0-9a-f]{32}$/m);
    const body = readFileSync(planned.outputs['comment-file'], 'utf8');
    expect(body.startsWith('<!-- edgeplane-plan dir=edge -->\n')).toBe(true);
    expect(body).toContain('Planned at abcdef012345 by [this run](https://github.example/o/r/actions/runs/42)');
    // The key never reaches the comment; the URL of the API is the plan's target.
    expect(body).not.toContain(key);

    const posted = await step('comment', ws, event, { GITHUB_TOKEN: 'gh-token', INPUT_COMMENT_FILE: planned.outputs['comment-file'] });
    expect(posted.code, posted.stdout).toBe(0);
    expect(posted.stdout).toContain('comment created');
    const mine = gh.comments.filter((c) => c.user.login === 'github-actions[bot]' && c.issue === 7);
    expect(mine).toHaveLength(1);
    expect(mine[0].body).toMatch(/5 to create/);

    // A new push: the same comment is updated, no second one.
    editFile(join(ws, 'edge', 'https-edge.yaml'), 'Public site and partner API', 'Public site');
    const again = await step('plan', ws, event);
    const reposted = await step('comment', ws, event, { GITHUB_TOKEN: 'gh-token', INPUT_COMMENT_FILE: again.outputs['comment-file'] });
    expect(reposted.stdout).toContain('comment updated');
    expect(gh.comments.filter((c) => c.user.login === 'github-actions[bot]' && c.issue === 7)).toHaveLength(1);
    expect(gh.comments.find((c) => c.id === 1)!.body).toContain('not mine');
    expect(gh.calls.filter((c) => c.startsWith('POST'))).toHaveLength(1);
    expect(gh.calls.filter((c) => c.startsWith('PATCH'))).toHaveLength(1);

    // Merged: apply on the default branch, its outcome in the summary.
    const mode = await step('mode', ws, event, { GITHUB_EVENT_NAME: 'push', GITHUB_REF: 'refs/heads/main', DEFAULT_BRANCH: 'main' });
    expect(mode.outputs.command).toBe('apply');
    const applied = await step('apply', ws, event, { GITHUB_EVENT_NAME: 'push' });
    expect(applied.code, applied.stdout).toBe(0);
    expect(applied.summary).toContain('### edgeplane apply of `edge`: done');
    expect(applied.summary).toMatch(/Apply: 5 done, 0 failed/);
    const after = await step('plan', ws, event);
    expect(after.outputs).toMatchObject({ exitcode: '0', changes: 'false' });
    expect(readFileSync(after.outputs['comment-file'], 'utf8')).toMatch(/no changes/i);

    // A wrong token: the step fails and says which permission the job needs.
    const denied = await step('comment', ws, event, { GITHUB_TOKEN: 'wrong', INPUT_COMMENT_FILE: after.outputs['comment-file'] });
    expect(denied.code).toBe(1);
    expect(denied.stdout).toMatch(/^::error::GitHub GET \/repos\/o\/r\/issues\/7\/comments\?per_page=100&page=1: 401 Bad credentials/m);
  });

  it('annotates each problem of invalid manifests at its file, line and column, fails, and still comments why', async () => {
    const { ws, event } = workspace();
    editFile(join(ws, 'edge', 'https-edge.yaml'), 'match_type: path_prefix\n    match: /api/', 'match_type: path_prefx\n    match: /api/');
    const planned = await step('plan', ws, event);
    expect(planned.code).toBe(1);
    const line = readFileSync(join(ws, 'edge', 'https-edge.yaml'), 'utf8').split('\n').findIndex((l) => l.includes('path_prefx')) + 1;
    expect(planned.stdout).toMatch(new RegExp(`^::error file=edge/https-edge\\.yaml,line=${line},col=\\d+,title=edgeplane%3A [\\w-]+::routes\\[1\\]\\.match_type: .*path_prefix`, 'm'));
    expect(planned.outputs.exitcode).toBe('1');
    const body = readFileSync(planned.outputs['comment-file'], 'utf8');
    expect(body).toContain(`edge/https-edge.yaml:${line}:`);
    expect(body).toContain('Checked at abcdef012345');
    // And the run as a whole fails with a line that says why.
    expect(planned.stdout).toMatch(/^::error::the manifests have problems \(annotated above\)$/m);
  });

  it('keeps the API URL out of the comment when edgeplane.yaml names the target (target_name)', async () => {
    const { ws, event } = workspace();
    // The same stack as the test above (its CA's certificate is that stack's: another stack would conflict on it).
    writeFileSync(join(ws, 'edge', 'edgeplane.yaml'), 'stack: small-example\ntarget_name: production\n');
    const planned = await step('plan', ws, event);
    expect(planned.outputs.exitcode, planned.stdout).toBe('2');
    const body = readFileSync(planned.outputs['comment-file'], 'utf8');
    expect(body).toContain('Target: `production`');
    expect(body).not.toContain(served.url);
    expect(body).not.toContain(new URL(served.url).host);
    // A plan that fails (the API refuses the key) says so without the URL either.
    const refused = await step('plan', ws, event, { EDGEPLANE_API_KEY: 'ep_wrong' });
    expect(refused.code).toBe(1);
    const said = readFileSync(refused.outputs['comment-file'], 'utf8');
    expect(said).toContain('### edgeplane plan of `edge` failed');
    expect(said).toContain("the [run's log](https://github.example/o/r/actions/runs/42) says why");
    expect(said).not.toContain(new URL(served.url).host);
  });

  it('drift: opens one issue with the plan while the live state differs, updates it on later runs, closes it when none is left', async () => {
    const { ws, event } = workspace();
    const schedule = { GITHUB_EVENT_NAME: 'schedule', GITHUB_SHA: '0123456789abcdef0123456789abcdef01234567', GITHUB_TOKEN: 'gh-token' };
    gh.issues.push({ number: 1000, title: 'forged', body: '<!-- edgeplane-drift dir=edge -->\nnot mine', state: 'open', user: { login: 'mallory' }, html_url: '' });
    // The live objects (the stack as the first test applied it, or nothing) differ from this copy's hostport.
    const driftRun = async () => {
      const planned = await step('plan', ws, event, schedule);
      return step('drift', ws, event, { ...schedule, INPUT_PLAN_EXITCODE: planned.outputs.exitcode, INPUT_MARKDOWN_FILE: planned.outputs['comment-file'] });
    };
    const first = await driftRun();
    expect(first.code, first.stdout).toBe(0);
    expect(first.stdout).toContain('drift issue opened');
    const mine = () => gh.issues.filter((i) => i.user.login === 'github-actions[bot]');
    expect(mine()).toHaveLength(1);
    expect(mine()[0]).toMatchObject({ title: 'edgeplane: live state drifted from the manifests of edge', state: 'open' });
    expect(mine()[0].body).toMatch(/^<!-- edgeplane-drift dir=edge -->\nThe live state differs from the manifests of `edge` at 0123456789ab/);
    expect(mine()[0].body).toContain('HTTPSEdge/web');
    expect((await driftRun()).stdout).toContain('drift issue updated');
    expect(mine()).toHaveLength(1);

    // Applied: the next check finds none and closes the issue with a comment.
    expect((await step('apply', ws, event, { GITHUB_EVENT_NAME: 'push' })).code).toBe(0);
    const gone = await driftRun();
    expect(gone.stdout).toContain('drift issue closed');
    expect(mine()[0].state).toBe('closed');
    expect(gh.comments.find((c) => c.issue === mine()[0].number)!.body).toBe('No drift any more (checked by [this run](https://github.example/o/r/actions/runs/42)): closing.');
    expect((await driftRun()).stdout).toContain('no drift, and no drift issue open');
    // Someone else's issue with the marker is never touched.
    expect(gh.issues.find((i) => i.number === 1000)).toMatchObject({ state: 'open', body: '<!-- edgeplane-drift dir=edge -->\nnot mine' });
    // A plan that did not finish leaves the issue as it is.
    expect((await step('drift', ws, event, { ...schedule, INPUT_PLAN_EXITCODE: '1' })).stdout).toContain('the drift issue is left as it is');
  });

  it('chooses the command: plan on a pull request, apply on a push to the default branch only', async () => {
    const { ws, event } = workspace();
    const cases: [Record<string, string>, string | null][] = [
      [{ GITHUB_EVENT_NAME: 'pull_request', GITHUB_REF: 'refs/pull/7/merge', DEFAULT_BRANCH: 'main' }, 'plan'],
      [{ GITHUB_EVENT_NAME: 'push', GITHUB_REF: 'refs/heads/feature', DEFAULT_BRANCH: 'main' }, 'plan'],
      [{ GITHUB_EVENT_NAME: 'push', GITHUB_REF: 'refs/heads/main', DEFAULT_BRANCH: 'main' }, 'apply'],
      [{ GITHUB_EVENT_NAME: 'pull_request', INPUT_COMMAND: 'apply' }, 'apply'],
      [{ GITHUB_EVENT_NAME: 'schedule', INPUT_COMMAND: 'drift' }, 'drift'],
      [{ GITHUB_EVENT_NAME: 'push', INPUT_COMMAND: 'aply' }, null],
    ];
    for (const [env, want] of cases) {
      const r = await step('mode', ws, event, env);
      if (want) expect(r.outputs.command, JSON.stringify(env)).toBe(want);
      else expect(r.stdout).toContain('::error::input command must be auto, plan, apply, drift or install (got "aply")');
    }
  });
});
