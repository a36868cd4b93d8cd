import { resolve } from 'node:path';
import type { AppOptions } from '../service/app.js';
import { LockHeldError, type LockHolder } from '../store/dir-lock.js';
import type { HandBack } from '../client/worker-channel.js';
import { embeddedTransport, readCredentials } from './embedded.js';
import { httpTransport, type RawResponse, type Transport } from '../client/transport.js';

export interface StateDirOptions {
  /** While this process holds the directory, its service also answers other commands (watch): see `embeddedTransport`. */
  serveOthers?: boolean;
  /** The command only reads (plan, export): see `embeddedTransport`. */
  readsOnly?: boolean;
  /** Told when requests move to another service of the directory: the holder they went through stopped. */
  onRetarget?(from: string, to: string): void;
  /** Each request's deadline through a holder (`--timeout`, `EDGEPLANE_TIMEOUT`); the HTTP transport's default without it. */
  timeoutMs?: number;
  /**
   * How long to wait for a directory another process holds without serving it (an apply): it is
   * tried again until then, from a quarter second apart, growing to 2 s. Absent or 0: it fails at
   * once with `LockHeldError`, as it does when the wait runs out.
   */
  waitMs?: number;
  /** Told once, when such a wait starts. */
  onWait?(holder: LockHolder): void;
  /** Between tries (tests make it instant). */
  sleep?(ms: number): Promise<void>;
}

/** The directory's service as it is now: this process's own (it took the lock), or the holder's (`holder`), over HTTP at the URL its lock records. */
interface Service { transport: Transport; holder?: LockHolder }

async function currentService(dir: string, appOptions: Partial<AppOptions>, how: StateDirOptions): Promise<Service> {
  try {
    return { transport: await embeddedTransport(dir, appOptions, { serveOthers: how.serveOthers, readsOnly: how.readsOnly }) };
  } catch (err) {
    const creds = readCredentials(dir);
    if (err instanceof LockHeldError && err.holder.url && creds) return { transport: httpTransport(err.holder.url, creds.api_key, { timeoutMs: how.timeoutMs }), holder: err.holder };
    throw err;
  }
}

/**
 * The service of the state directory `stateDir`, whoever runs it: the embedded service in this
 * process if it can take the directory's lock (`embeddedTransport`), else the process that holds
 * it (`edgeplane serve`, or a `watch`), over HTTP at the URL the lock records, with the
 * directory's own key. A directory held by a process that serves nothing fails with
 * `LockHeldError`, as before.
 *
 * Through a holder, the answer is not settled for good: the holder may stop while this process
 * still runs (a `watch` started beside another one). A request whose connection the holder's URL
 * refuses — nobody listens there, so nothing of it was received, and it is safe to send again,
 * writes included — looks at the directory again: free, this process opens it itself (and serves
 * it to others too, with `serveOthers`); held by another process at another URL, requests go
 * there; still held at the same URL (the holder closes its port before it releases the lock, or
 * it hangs), the request fails with the refusal, and the caller's next attempt looks again.
 * Other failures are not looked into: a connection reset or a timeout may have reached the
 * holder. The API's own links to a holder that stopped (`next_page_uri` of a list being read)
 * are followed on the directory's service now, as paths: it is the same database.
 */
export async function stateDirTransport(stateDir: string, appOptions: Partial<AppOptions> = {}, how: StateDirOptions = {}): Promise<Transport> {
  const dir = resolve(stateDir);
  const first = await untilServed(() => currentService(dir, appOptions, how), how);
  // This process holds the directory (or runs on DATABASE_URL): nothing can move it elsewhere.
  if (!first.holder) return first.transport;
  return new ThroughHolder(dir, first.transport, first.holder, () => currentService(dir, appOptions, how), how.onRetarget);
}

/**
 * `get` again while the directory is held by a process that serves it to nobody (`how.waitMs`):
 * two applies on one state directory take turns, as two applies on one service do.
 */
async function untilServed(get: () => Promise<Service>, how: StateDirOptions): Promise<Service> {
  const sleep = how.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const started = Date.now();
  let pause = 250;
  let told = false;
  for (;;) {
    try {
      return await get();
    } catch (err) {
      const waited = Date.now() - started;
      if (!(err instanceof LockHeldError) || err.holder.url || !how.waitMs || waited >= how.waitMs) throw err;
      if (!told) how.onWait?.(err.holder);
      told = true;
      await sleep(Math.min(pause, how.waitMs - waited));
      pause = Math.min(2000, pause * 1.5);
    }
  }
}

function refused(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'ECONNREFUSED';
}

class ThroughHolder implements Transport {
  /** The holder's, while it answers; once it stops, the directory's service as found then. */
  private current: Transport;
  /** Whom `current` goes through (undefined once this process serves the directory itself). */
  private holder: LockHolder | undefined;
  private moving: Promise<boolean> | undefined;
  /** The transports to holders that stopped: closed with this one (requests may still be on their way out). */
  private readonly retired: Transport[] = [];
  private closed = false;

  constructor(
    private readonly dir: string,
    first: Transport,
    holder: LockHolder,
    private readonly look: () => Promise<Service>,
    private readonly onRetarget?: (from: string, to: string) => void,
  ) {
    this.current = first;
    this.holder = holder;
  }

  get target(): string {
    return this.current.target;
  }

  async request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<RawResponse> {
    for (let moves = 0; ; moves++) {
      const t = this.current;
      try {
        return await t.request(method, this.local(path), body, headers);
      } catch (err) {
        // Two moves in one request: the directory changes hands faster than it can be followed.
        if (!refused(err) || moves >= 2 || !(await this.move(t, err))) throw err;
      }
    }
  }

  readPages(path: string, onPage: (res: RawResponse) => boolean): Promise<HandBack> {
    // A page the reader cannot get (refused) is handed back, and read with `request`: that moves.
    const t = this.current;
    return t.readPages ? t.readPages(this.local(path), onPage) : Promise.resolve({ path });
  }

  readsAhead(): boolean {
    return this.current.readsAhead?.() ?? false;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.moving?.catch(() => {});
    await Promise.all([...this.retired, this.current].map((t) => t.close()));
  }

  /** A link of a holder that stopped, as a path on the directory's service now. */
  private local(path: string): string {
    if (!/^https?:\/\//.test(path)) return path;
    for (const t of this.retired) {
      const base = t.target;
      if (path.startsWith(base) && /^([/?]|$)/.test(path.slice(base.length))) return path.slice(base.length) || '/';
    }
    return path;
  }

  /**
   * `from` refused a connection: looks at the directory again (once for all the requests that
   * find it so at the same time). Resolves true when requests now go elsewhere (try again there),
   * false when the same holder is still recorded; rejects when the directory cannot be reached now.
   */
  private move(from: Transport, refusal: unknown): Promise<boolean> {
    if (this.current !== from) return Promise.resolve(true); // moved already, by a request beside this one
    if (!this.holder || this.closed) return Promise.resolve(false);
    return (this.moving ??= this.lookAgain(from, refusal).finally(() => { this.moving = undefined; }));
  }

  private async lookAgain(from: Transport, refusal: unknown): Promise<boolean> {
    let next: Service;
    try {
      next = await this.look();
    } catch (err) {
      // Held by a process that serves nothing (a one-off command), say: the caller tries again later.
      throw new Error(`${(refusal as Error).message}: the process that served ${this.dir} there has stopped, and ${this.dir} cannot be opened now: ${(err as Error).message}`, { cause: err });
    }
    const same = next.holder && next.holder.pid === this.holder!.pid && next.holder.url === this.holder!.url;
    if (same || this.closed) {
      await next.transport.close();
      return false;
    }
    this.retired.push(from);
    this.current = next.transport;
    this.holder = next.holder;
    this.onRetarget?.(from.target, next.transport.target);
    return true;
  }
}
