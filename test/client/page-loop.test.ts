import { describe, expect, it } from 'vitest';
import { nextLink } from '../../src/client/page-loop.js';

describe('a page reader finds the next link', () => {
  const next = 'http://api.example/backends/failover?before_id=fo_1&limit=100';
  it('in the Link header, without reading the page', () => {
    expect(nextLink('not JSON at all', { link: `<${next}>; rel="next"` })).toBe(next);
    expect(nextLink('{}', { link: `<http://api.example/x>; rel="prev", <${next}>; rel=next` })).toBe(next);
  });

  it('an absolute Link is taken as written (the page\'s own next link, in the same spelling)', () => {
    expect(nextLink('{}', { link: '<http://localhost:80/x?before_id=a>; rel="next"' }, 'http://localhost:80/x')).toBe('http://localhost:80/x?before_id=a');
  });

  it('a relative Link is read against the page\'s URL, as the page\'s own next link reads', () => {
    expect(nextLink('{}', { link: '</backends/failover?before_id=fo_1&limit=100>; rel="next"' }, 'http://api.example/backends/failover?limit=100')).toBe(next);
  });

  it('at the end of the page, or in the whole page when something follows it (an etags map) and there is no Link', () => {
    expect(nextLink(JSON.stringify({ backends: [{ id: 'a' }], uri: 'u', next_page_uri: next }))).toBe(next);
    expect(nextLink(JSON.stringify({ backends: [], next_page_uri: next, etags: { a: '"1"' } }), { 'content-type': 'application/json' })).toBe(next);
    // A Link of another relation says nothing of the next page.
    expect(nextLink(JSON.stringify({ backends: [], next_page_uri: null }), { link: '<http://api.example/x>; rel="prev"' })).toBeNull();
  });

  it('none on the last page, or on an answer that is not a page', () => {
    expect(nextLink(JSON.stringify({ backends: [], next_page_uri: null, etags: {} }))).toBeNull();
    expect(nextLink('<html>busy</html>')).toBeNull();
  });
});
