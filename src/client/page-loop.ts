// Reading a list page after page on a thread other than the one that uses the pages: each next
// page is asked for the moment the previous one arrives, however busy the using thread is. The
// embedded service's thread (embedded-service.ts) runs it; the protocol's other end is
// `WorkerChannel` (worker-channel.ts).
//
// Messages in: { id, url } reads a list from `url` on; { cancel: id } stops reading it.
// Messages out, in order per id: { id, url, status, headers, text or bytes, next, more } for each response
// (`next`: the page's next link or null; `more`: whether this thread reads it), or { id, url, error, code? }
// when a request failed. A response other than 2xx or a failure ends the reading here: the using
// thread reads that URL itself, with the client's retries, except after a timeout (`EP_TIMEOUT`:
// the list fails, as a request of the using thread's own would).

/** An answer, its body as text or as UTF-8 bytes (moved, not copied, to the using thread). */
export type LoopResponse = { status: number; headers: Record<string, string> } & ({ text: string; bytes?: undefined } | { bytes: ArrayBuffer; text?: undefined });
export type ListMessage = { id: number; url: string } | { cancel: number };

const utf8 = new TextDecoder();
/** A body's text from its UTF-8 bytes. */
export function textOf(bytes: ArrayBuffer): string {
  return utf8.decode(bytes);
}

/** A page without `Prefer: etags` ends with its next link: read from the end. */
const TAIL = /"next_page_uri"\s*:\s*(null|"(?:[^"\\]|\\.)*")\s*}\s*$/;
const ABSOLUTE = /^[a-z][a-z0-9+.-]*:/i;
/** The service's `Link` header: `<url>; rel="next"`. */
const LINK_NEXT = /<([^>]*)>\s*;\s*rel="?next"?(?:\s*[;,]|\s*$)/;

/**
 * A page's next link, from its `Link` header, else from the end of its text; the whole page is
 * parsed only when neither has it (a list with no next page has no `Link`: its text says null).
 */
export function nextLink(body: string | ArrayBuffer, headers: Record<string, string> = {}, url?: string): string | null {
  const link = headers.link === undefined ? null : LINK_NEXT.exec(headers.link);
  if (link?.[1]) {
    // A relative link is relative to the page's URL (RFC 8288); an absolute one is taken as written.
    if (url === undefined || ABSOLUTE.test(link[1])) return link[1];
    try { return new URL(link[1], url).href; } catch { /* unreadable: the page says */ }
  }
  const text = typeof body === 'string' ? body : textOf(body);
  const m = TAIL.exec(text.slice(-2048));
  let next: unknown;
  if (m) next = JSON.parse(m[1]);
  else {
    try { next = (JSON.parse(text) as { next_page_uri?: unknown }).next_page_uri; } catch { next = null; }
  }
  return typeof next === 'string' && next ? next : null;
}

/**
 * `get(url)` answers { status, headers, text } (or rejects); `post` sends a message to the using
 * thread. Returns the handler of incoming list messages.
 */
export function pageLoop(get: (url: string) => Promise<LoopResponse>, post: (m: unknown, transfer: ArrayBuffer[]) => void): (m: ListMessage) => void {
  const cancelled = new Set<number>();

  async function read(id: number, url: string): Promise<void> {
    for (;;) {
      if (cancelled.delete(id)) return;
      let res: LoopResponse;
      try {
        res = await get(url);
      } catch (err) {
        // The code travels with the message: a timeout (`EP_TIMEOUT`) is final, not read again.
        const e = err as { message?: unknown; code?: unknown } | undefined;
        post({ id, url, error: String(e?.message ?? err), ...(typeof e?.code === 'string' ? { code: e.code } : {}) }, []);
        return;
      }
      const next = res.status >= 200 && res.status < 300 ? nextLink(res.text ?? res.bytes, res.headers, url) : null;
      const more = next !== null && next !== url;
      post({ id, url, status: res.status, headers: res.headers, text: res.text, bytes: res.bytes, next, more }, res.bytes ? [res.bytes] : []);
      if (!more) return void cancelled.delete(id);
      url = next;
    }
  }

  return (m) => {
    if ('cancel' in m) cancelled.add(m.cancel);
    else void read(m.id, m.url);
  };
}
