import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { backoffMs } from '../../src/agent/agent.js';
import { AgentConfigError, readAgentConfig } from '../../src/agent/config.js';
import { GitSource, gitEnv, redactUrl } from '../../src/agent/git-source.js';
import { validSignature } from '../../src/agent/server.js';
import { cleanupDirs, tempDir } from '../helpers/reconcile.js';

function configFile(text: string): string {
  const file = join(tempDir('ep-agent-conf-'), 'agent.yaml');
  writeFileSync(file, text);
  return file;
}
const problems = (text: string): string[] => {
  try {
    readAgentConfig(configFile(text));
  } catch (err) {
    if (err instanceof AgentConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('agent.yaml', () => {
  afterAll(() => cleanupDirs());

  it('reads sources and stacks with their defaults; a local source is the file\'s', () => {
    const file = configFile('sources:\n  - name: main\n    url: ../repo\n    interval: 30s\nstacks:\n  - source: main\n    path: stacks\n    drift: repair\n');
    const c = readAgentConfig(file);
    expect(c.sources).toEqual([{ name: 'main', url: join(file, '../../repo'), ref: 'HEAD', intervalMs: 30_000 }]);
    expect(c.stacks).toEqual([{ source: 'main', path: 'stacks', mode: 'apply', driftIntervalMs: 300_000, drift: 'repair', suspend: false, force: false, allowProtectedChanges: false, overridePolicies: [] }]);
    expect(c.port).toBe(8090);
    expect(readAgentConfig(configFile('sources: [{name: a, url: "https://git.example/r.git", ref: v1}]\nstacks: [{source: a}]\n')).sources[0].url).toBe('https://git.example/r.git');
  });

  it('is strict: every problem at its line and column, an unknown key with the one meant', () => {
    const found = problems('sources:\n  - name: main\n    url: x\n    intervall: 5s\nstacks:\n  - source: main\n    mode: aply\nwebhok_secret_env: X\n');
    expect(found).toEqual(expect.arrayContaining([
      expect.stringMatching(/agent\.yaml:4:5: intervall is not a setting of agent\.yaml sources \(did you mean "interval"\?\)/),
      expect.stringMatching(/agent\.yaml:7:11: stacks\.0\.mode must be equal to one of the allowed values/),
      expect.stringMatching(/agent\.yaml:8:1: webhok_secret_env is not a setting of agent\.yaml \(did you mean "webhook_secret_env"\?\)/),
    ]));
    expect(problems('sources: [{name: a, url: x}]\nstacks: [{source: b}]\n')).toEqual([expect.stringMatching(/source b is not one of the sources \(did you mean "a"\?\)/)]);
    expect(problems('sources: [{name: a, url: x, interval: soon}]\nstacks: [{source: a}]\n')[0]).toMatch(/must be a duration such as 30s/);
    expect(problems('sources: [{name: a, url: x}]\nstacks: [{source: a, path: ../elsewhere}]\n')[0]).toMatch(/path must be a folder inside the source/);
    expect(problems('sources: [\n')[0]).toMatch(/agent\.yaml:\d+:\d+: /);
  });

  it('override_policies: each a policy\'s name and the reason its runs record', () => {
    const c = readAgentConfig(configFile('sources: [{name: a, url: x}]\nstacks:\n  - source: a\n    override_policies:\n      - name: cap-edge-deletes\n        reason: " the migration of 2026-12 (CHG-1142) "\n'));
    expect(c.stacks[0].overridePolicies).toEqual([{ policy: 'cap-edge-deletes', reason: 'the migration of 2026-12 (CHG-1142)' }]);
    const found = problems('sources: [{name: a, url: x}]\nstacks:\n  - source: a\n    override_policies:\n      - name: p\n        reasn: because\n      - {name: q, reason: "  "}\n');
    expect(found).toEqual(expect.arrayContaining([
      expect.stringMatching(/agent\.yaml:6:9: reasn is not a setting of agent\.yaml override_policies \(did you mean "reason"\?\); the settings are name, reason/),
      expect.stringMatching(/agent\.yaml:7:\d+: stacks\.0\.override_policies\.1\.reason must say why the policy is let through/),
    ]));
    expect(problems('sources: [{name: a, url: x}]\nstacks: [{source: a, override_policies: [{name: p, reason: r}, {name: p, reason: s}]}]\n')).toEqual([expect.stringMatching(/agent\.yaml:2:\d+: override_policies names p twice$/)]);
  });
});

describe('the agent\'s parts', () => {
  it('a webhook signature is the HMAC-SHA256 of the body with the secret', () => {
    const body = Buffer.from('{"ref":"refs/heads/main"}');
    const good = 'sha256=' + createHmac('sha256', 's3cret').update(body).digest('hex');
    expect(validSignature('s3cret', body, good)).toBe(true);
    expect(validSignature('s3cret', body, good.toUpperCase().replace('SHA256', 'sha256'))).toBe(true);
    expect(validSignature('other', body, good)).toBe(false);
    expect(validSignature('s3cret', Buffer.from('{}'), good)).toBe(false);
    expect(validSignature('s3cret', body, undefined)).toBe(false);
    expect(validSignature('s3cret', body, 'sha1=abc')).toBe(false);
  });

  it('backoff doubles from 2 s to 5 min, with jitter of a quarter either way', () => {
    expect(backoffMs(1, () => 0.5)).toBe(2000);
    expect(backoffMs(3, () => 0.5)).toBe(8000);
    expect(backoffMs(30, () => 0.5)).toBe(300_000);
    expect(backoffMs(1, () => 0)).toBe(1500);
    expect(backoffMs(1, () => 1)).toBe(2500);
  });

  it('credentials: a token reaches git through its credential helper, never a command line; URLs are shown without them', async () => {
    const env = gitEnv({ ...process.env, EDGEPLANE_GIT_TOKEN: 'tok-123', EDGEPLANE_GIT_SSH_KEY: "/keys/it's" });
    expect(env.GIT_TERMINAL_PROMPT).toBe('0');
    expect(env.GIT_SSH_COMMAND).toBe("ssh -i '/keys/it'\\''s' -o IdentitiesOnly=yes -o BatchMode=yes");
    const helper = '!f() { test "$1" = get || exit 0; echo username=x-access-token; echo "password=$EDGEPLANE_GIT_TOKEN"; }; f';
    const filled = execFileSync('git', ['-c', 'credential.helper=', '-c', `credential.helper=${helper}`, 'credential', 'fill'], { input: 'protocol=https\nhost=git.example\n\n', env, encoding: 'utf8' });
    expect(filled).toContain('password=tok-123');
    expect(redactUrl('fatal: unable to access https://ann:tok-123@git.example/r.git/')).toBe('fatal: unable to access https://***@git.example/r.git/');
    const src = new GitSource({ name: 'a', url: 'https://ann:tok-123@127.0.0.1:1/r.git', ref: 'main', intervalMs: 1000 }, join(tempDir('ep-agent-src-'), 'a'), { ...process.env, EDGEPLANE_GIT_TOKEN: 'tok-123' });
    const err = await src.fetch(10_000).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^cannot fetch main of source a \(https:\/\/\*\*\*@127\.0\.0\.1:1\/r\.git\)/);
    expect((err as Error).message).not.toContain('tok-123');
  });
});
