import { describe, expect, it } from 'vitest';
import { withoutCredentials } from '../../src/util/shown-url.js';
import { serviceOptionsFromEnv } from '../../src/cli/service-config.js';

describe('URLs as edgeplane shows them', () => {
  it('leaves out a user and password, also from a URL that does not parse (a password with # / ? or a space)', () => {
    expect(withoutCredentials('https://deploy:s3cret@edge-api.example.com/v1')).toBe('https://edge-api.example.com/v1');
    expect(withoutCredentials('https://edge-api.example.com')).toBe('https://edge-api.example.com');
    for (const pw of ['Xk9#PWLEAKq2', 'a/b', 'a?b', 'two words']) {
      const shown = withoutCredentials(`https://deploy:${pw}@edge-api.example.com`);
      expect(shown).not.toContain(pw.split(/[#/? ]/)[1]);
      expect(shown).not.toContain('deploy');
      expect(shown).toMatch(/^https:\/\/(\*\*\*@)?edge-api\.example\.com\/?$/);
    }
    expect(withoutCredentials('deploy:pw#1@host')).toBe('***@host');
    expect(withoutCredentials('not a url')).toBe('not a url');
  });

  it('serve refuses a public URL with credentials without showing them', () => {
    expect(() => serviceOptionsFromEnv({ EDGEPLANE_PUBLIC_URL: 'https://u:S3CRET@edge.example/?q=1' })).toThrow(/^EDGEPLANE_PUBLIC_URL: must be .*got "https:\/\/edge\.example\/\?q=1"$/);
  });
});

describe('EDGEPLANE_PUBLIC_URL as the service and `admin users` use it', () => {
  it('an ASCII URL as written; an international one in its ASCII form (it goes into headers)', () => {
    expect(serviceOptionsFromEnv({ EDGEPLANE_PUBLIC_URL: 'https://API.Example.com:443/Edge/' }).publicUrl).toBe('https://API.Example.com:443/Edge/');
    expect(serviceOptionsFromEnv({ EDGEPLANE_PUBLIC_URL: 'https://api.例え.jp/édge' }).publicUrl).toBe('https://api.xn--r8jz45g.jp/%C3%A9dge');
  });
});
