import { describe, expect, it } from 'vitest';
import { didYouMean, suggest } from '../../src/util/suggest.js';
import { displayPath } from '../../src/util/display-path.js';

describe('suggest', () => {
  it('finds the word meant: a case slip first, else the nearest within a third of its length', () => {
    expect(suggest('stak', ['stack', 'state'])).toBe('stack');
    expect(suggest('GITHUB', ['gitlab', 'github'])).toBe('github');
    expect(suggest('hostport', ['hostports', 'metadata'])).toBe('hostports');
    expect(suggest('foo', ['bar', 'baz'])).toBeUndefined();
    expect(suggest('stack', ['stack'])).toBeUndefined();
    expect(didYouMean('x', [])).toBe('');
  });
});

describe('displayPath', () => {
  it('is relative inside the working directory, absolute outside it', () => {
    expect(displayPath('/w/a/b.yaml', '/w')).toBe('a/b.yaml');
    expect(displayPath('/tmp/x.yaml', '/w/a')).toBe('/tmp/x.yaml');
    expect(displayPath('/w', '/w')).toBe('.');
    expect(displayPath('..x/y', '/w')).toBe('..x/y');
  });
});
