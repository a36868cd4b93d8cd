import { describe, expect, it } from 'vitest';
// The action's step helpers (plain .mjs, no types): their rules, apart from a runner.
// @ts-expect-error -- a JavaScript module without declarations
import { annotations, capped, marker, repoPath } from '../../action/lib.mjs';
// @ts-expect-error -- a JavaScript module without declarations
import { actionRepository, installCommands } from '../../action/install.mjs';

describe("the action's steps", () => {
  it('annotations: path from the checkout, escaped properties and message, at most 50 and a count of the rest', () => {
    const p = (i: number) => ({ file: '/ws/edge/a,b.yaml', line: i, col: 3, severity: i === 2 ? 'warning' : 'error', path: 'routes[0].match', rule: 'schema', message: `50% wrong:\nnext line ${i}` });
    const lines = annotations([p(1), p(2)], { workspace: '/ws' });
    expect(lines).toEqual([
      '::error file=edge/a%2Cb.yaml,line=1,col=3,title=edgeplane%3A schema::routes[0].match: 50%25 wrong:%0Anext line 1',
      '::warning file=edge/a%2Cb.yaml,line=2,col=3,title=edgeplane%3A schema::routes[0].match: 50%25 wrong:%0Anext line 2',
    ]);
    const many = annotations(Array.from({ length: 53 }, (_, i) => p(i + 10)), { workspace: '/ws' });
    expect(many).toHaveLength(51);
    expect(many[50]).toBe('::error::edgeplane: 3 more problems (edgeplane validate lists them all)');
    // A file outside the checkout keeps its absolute path.
    expect(repoPath('/elsewhere/x.yaml', '/ws')).toBe('/elsewhere/x.yaml');
  });

  it('the job summary is cut within its byte limit, never inside a character, saying so', () => {
    const text = 'é'.repeat(1000); // 2,000 bytes
    expect(capped(text, 2000, 'cut')).toBe(text);
    const cut = capped(text, 1001, '(cut)');
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(1001);
    expect(cut).toMatch(/^é+\n\n\(cut\)\n$/);
  });

  it('the comment marker: one per directory, and nothing in a directory name can end the HTML comment', () => {
    expect(marker('edge')).toBe('<!-- edgeplane-plan dir=edge -->');
    expect(marker('a-->b')).toBe('<!-- edgeplane-plan dir=a-b -->');
    expect(marker('stacks/prod')).not.toBe(marker('stacks/staging'));
  });

  it('install: the release of the action\'s own version from its repository; source builds the checkout; no install script runs', () => {
    expect(actionRepository({ GITHUB_ACTION_PATH: '/home/runner/work/_actions/acme/edgeplane/v0.1.0' })).toBe('acme/edgeplane');
    expect(actionRepository({ ACTION_REPOSITORY: 'acme/edge', GITHUB_ACTION_PATH: '/x/_actions/o/n/r' })).toBe('acme/edge');
    const [[, release]] = installCommands('release', { version: '0.1.0', repository: 'acme/edgeplane', server: 'https://github.com' });
    expect(release.slice(-1)).toEqual(['https://github.com/acme/edgeplane/releases/download/v0.1.0/edgeplane-0.1.0.tgz']);
    expect(release).toContain('--ignore-scripts');
    expect(installCommands('source', { actionPath: '/a', version: '0.1.0' }).map(([cwd, args]: [string, string[]]) => `${cwd ?? '-'} npm ${args[0]} ${args[1]}`)).toEqual(['/a npm ci --ignore-scripts', '/a npm run build', '- npm install --global']);
    expect(installCommands('none', { version: '0.1.0' })).toEqual([]);
    expect(() => installCommands('latest', { version: '0.1.0' })).toThrow('input install must be release, source, npm or none (got "latest")');
  });
});
