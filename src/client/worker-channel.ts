import type { Worker } from 'node:worker_threads';
import { isFinal } from './api-client.js';
import { textOf } from './page-loop.js';
import { withoutCredentials } from '../util/shown-url.js';
import type { RawResponse } from './transport.js';

/** A list page or a failure, from `page-loop.ts`. */
type PageMessage =
  | { id: number; url: string; error: string; code?: string }
  | { id: number; url: string; error?: undefined; status: number; headers: Record<string, string>; text?: string; bytes?: ArrayBuffer; next: string | null; more: boolean };

/** The answer to a single request (the embedded service's thread). */
type ReplyMessage = { id: number; error: string } | { id: number; error?: undefined; status: number; headers: Record<string, string>; text: string };

/** What a thread says of itself: it could not start, it serves HTTP at a URL (the embedded service's), or it takes requests (the page reader's). */
type ControlMessage = { startError: { message: string } } | { listening: string } | { ready: true } | { closed: true };

/** Where a list was handed back: the page to read next (and its answer, when it was not 2xx). */
export type HandBack = { path: string; res?: RawResponse } | null;

/**
 * The main thread's end of a worker that answers requests and reads lists ahead (`page-loop.ts`):
 * the embedded service's thread and HTTP's page reader. Bodies cross as JSON text (or its UTF-8 bytes, moved)
 * and are parsed here, where they are used. The worker keeps the process alive only while
 * something waits on it. If it fails, every list it was reading is handed back at the page it was
 * on, and every request waiting (or made later) is rejected with what went wrong.
 */
export class WorkerChannel {
  private seq = 0;
  private readonly waiting = new Map<number, (m: PageMessage | ReplyMessage) => void>();
  private failed: Error | undefined;
  /** Set once `close(true)` waits for the worker to exit: from then on it stays referenced. */
  private closing = false;
  /** Called when the worker says it has closed what it holds (`{ closed: true }`), before its thread ends. */
  private closed?: () => void;
  /** Whether the worker has said it takes requests (`{ ready: true }`); requests sent before wait in its port. */
  ready = false;

  /**
   * `what` names the worker in the error its requests get if it stops; `onListening` hears the URL
   * it serves HTTP at, if it does.
   */
  constructor(private readonly worker: Worker, what: string, onListening?: (url: string) => void) {
    worker.unref();
    // Requests made while the worker starts wait in its port until it listens.
    worker.on('message', (m: PageMessage | ReplyMessage | ControlMessage) => {
      if ('startError' in m) fail(new Error(m.startError.message));
      else if ('listening' in m) onListening?.(m.listening);
      else if ('ready' in m) this.ready = true;
      else if ('closed' in m) {
        fail(new Error(`${what} stopped`)); // what still waits gets no answer now, as when the thread ends
        this.closed?.();
      }
      else if ('id' in m) this.waiting.get(m.id)?.(m);
    });
    const fail = (err: Error) => {
      this.failed ??= err;
      for (const deliver of [...this.waiting.values()]) deliver({ id: -1, url: '', error: this.failed.message });
    };
    worker.on('error', fail);
    worker.on('exit', () => fail(new Error(`${what} stopped`)));
  }

  /** One request, answered by the worker (`{ id, req: { method, path, body, headers } }`). */
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<RawResponse> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      const id = this.wait((message) => {
        this.done(id);
        const m = message as ReplyMessage; // this id is a request's
        if (m.error !== undefined) reject(this.failed ?? new Error(m.error));
        else resolve({ status: m.status, headers: m.headers, body: parse(m.text) });
      });
      this.worker.postMessage({ id, req: { method, path, body, headers } });
    });
  }

  /** `Transport.readPages` over the worker: see there. */
  readPages(url: string, onPage: (res: RawResponse) => boolean): Promise<HandBack> {
    if (this.failed) return Promise.resolve({ path: url });
    return new Promise((resolve, reject) => {
      let at = url;
      const stop = (more: boolean) => {
        if (more) this.worker.postMessage({ cancel: id });
        this.done(id);
      };
      const id = this.wait((message) => {
        const m = message as PageMessage; // this id is a list's
        if (m.error !== undefined) {
          stop(false);
          // A final failure (a timeout) is the list's; any other is read again by the client.
          const err = Object.assign(new Error(m.error), m.code === undefined ? {} : { code: m.code });
          return isFinal(err) ? reject(err) : resolve({ path: at });
        }
        const text = m.text ?? (m.bytes ? textOf(m.bytes) : '');
        if (m.status < 200 || m.status >= 300) return stop(false), resolve({ path: at, res: { status: m.status, headers: m.headers, body: parse(text) } });
        let wanted: boolean;
        const body = parse(text);
        try {
          wanted = onPage({ status: m.status, headers: m.headers, body });
        } catch (err) {
          return stop(m.more), reject(err);
        }
        // The page's own next link is the one read: a reader that followed another (a `Link`
        // header saying otherwise) hands the list back there.
        const said = (body as { next_page_uri?: unknown } | undefined)?.next_page_uri;
        const next = typeof said === 'string' && said ? said : null;
        if (wanted && !sameUrl(next, m.next)) return stop(m.more), resolve(next === null ? null : { path: next });
        if (!wanted || m.next === null) return stop(m.more), resolve(null);
        if (!m.more) return stop(false), resolve({ path: m.next });
        at = m.next;
      });
      this.worker.postMessage({ id, url });
    });
  }

  /** Whether the worker can take requests (it has not failed). */
  get usable(): boolean {
    return !this.failed;
  }

  /**
   * Ends the worker: `{ close: true }` first when it has something to close (it exits by itself),
   * else at once. Graceful, it resolves when the worker has closed what it holds (`{ closed: true }`)
   * or exited: the tear-down of its thread (some 20 ms) is no reason to keep the process up.
   */
  async close(graceful = false): Promise<void> {
    if (!graceful || this.failed) {
      await this.worker.terminate();
      return;
    }
    const done = new Promise<void>((r) => {
      this.closed = r;
      this.worker.once('exit', () => r());
    });
    this.closing = true; // a list that ends now (its last waiter gone) must not unref the worker
    this.worker.ref();
    this.worker.postMessage({ close: true });
    await done;
    this.worker.unref();
  }

  private wait(deliver: (m: PageMessage | ReplyMessage) => void): number {
    const id = ++this.seq;
    if (this.waiting.size === 0) this.worker.ref(); // someone waits: the process stays up for the answer
    this.waiting.set(id, deliver);
    return id;
  }

  private done(id: number) {
    this.waiting.delete(id);
    if (this.waiting.size === 0 && !this.closing) this.worker.unref();
  }
}

/** Two links to the same page, however each is spelt (`http://h:80/x` is `http://h/x`; credentials aside). */
function sameUrl(a: string | null, b: string | null): boolean {
  if (a === b) return true;
  if (a === null || b === null) return false;
  try { return new URL(withoutCredentials(a)).href === new URL(withoutCredentials(b)).href; } catch { return false; }
}

export function parse(text: string): unknown {
  if (!text) return undefined;
  try { return JSON.parse(text); } catch { return text; }
}
