/**
 * The URLs a transport to the API at `base` sends its key to. `onOrigin(path)` is the URL of a path
 * on the API's own origin, or undefined: a path is `/…` under the base (`base + "@evil.example/x"`,
 * or `".evil.example"` after a host, would name another host: a saved plan is a file anyone may
 * edit); a link the API gave is an absolute URL on the same origin. Behind a proxy that strips the
 * base's path prefix, the API's links leave the prefix out: it is put back.
 */
export function apiUrls(baseUrl: string): { base: string; origin: string; onOrigin(path: string): string | undefined } {
  const base = baseUrl.replace(/\/+$/, '');
  const parsed = new URL(base);
  const origin = parsed.origin;
  const basePath = parsed.pathname.replace(/\/+$/, '');
  const onOrigin = (path: string): string | undefined => {
    if (/^https?:\/\//i.test(path)) {
      const link = new URL(path);
      if (link.origin !== origin) return undefined;
      return basePath && link.pathname !== basePath && !link.pathname.startsWith(basePath + '/') ? base + link.pathname + link.search : path;
    }
    if (!path.startsWith('/') || path.startsWith('//')) return undefined;
    const url = base + path;
    return new URL(url).origin === origin ? url : undefined;
  };
  return { base, origin, onOrigin };
}
