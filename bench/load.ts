import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import type { Method } from './scenarios.js';

export interface LoadOptions {
  connections: number;
  /** Seconds measured. */
  duration: number;
  /** Seconds of load before measuring (same connections, same request), discarded. */
  warmup: number;
  /**
   * `child`: autocannon's CLI in its own process (the default). `inprocess`: autocannon's API in
   * this process, sharing the event loop with the server — only to show why `child` is used.
   */
  loadgen: 'child' | 'inprocess';
}

export interface LoadTarget {
  url: string;
  method: Method;
  headers: Record<string, string>;
  body?: string;
  /** Replace `[<id>]` in the body by a fresh id per request. */
  uniqueIds?: boolean;
}

export interface LoadResult {
  rps: number;
  /** CPU time this process (the server, and PGlite when in process) spent per measured request. */
  serverCpuUsPerReq: number;
  requests: number;
  latencyMs: { p50: number; p99: number; mean: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  bytesPerSec: number;
}

/** The parts of autocannon's result we read (CLI `--json` output and API result alike). */
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  throughput: { average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

const require = createRequire(import.meta.url);
const AUTOCANNON_BIN = require.resolve('autocannon/autocannon.js');

/**
 * Warms up (a separate, discarded run, so the measured run has exact bounds for the CPU count),
 * then measures.
 */
export async function runLoad(target: LoadTarget, opts: LoadOptions): Promise<LoadResult> {
  const run = (duration: number) => (opts.loadgen === 'child' ? runChild(target, opts.connections, duration) : runInProcess(target, opts.connections, duration));
  if (opts.warmup > 0) await run(opts.warmup);
  const cpuBefore = process.cpuUsage();
  const raw = await run(opts.duration);
  const cpu = process.cpuUsage(cpuBefore);
  return {
    rps: raw.requests.average,
    serverCpuUsPerReq: raw.requests.total ? Math.round((cpu.user + cpu.system) / raw.requests.total) : 0,
    requests: raw.requests.total,
    latencyMs: { p50: raw.latency.p50, p99: raw.latency.p99, mean: raw.latency.average },
    non2xx: raw.non2xx,
    errors: raw.errors,
    timeouts: raw.timeouts,
    bytesPerSec: raw.throughput.average,
  };
}

function runChild(target: LoadTarget, connections: number, duration: number): Promise<AutocannonResult> {
  const args = [
    AUTOCANNON_BIN, '--json', '--no-progress',
    '-c', String(connections), '-d', String(duration), '-m', target.method,
  ];
  for (const [k, v] of Object.entries(target.headers)) args.push('-H', `${k}=${v}`);
  if (target.body !== undefined) args.push('-b', target.body);
  if (target.uniqueIds) args.push('-I');
  args.push(target.url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}: ${err.trim()}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').at(-1)!) as AutocannonResult);
      } catch {
        reject(new Error(`autocannon printed no JSON result: ${out.slice(0, 500)} ${err.slice(0, 500)}`));
      }
    });
  });
}

async function runInProcess(target: LoadTarget, connections: number, duration: number): Promise<AutocannonResult> {
  const { default: autocannon } = (await import('autocannon' as string)) as { default: (o: object) => Promise<AutocannonResult> };
  return autocannon({
    url: target.url,
    method: target.method,
    headers: target.headers,
    body: target.body,
    idReplacement: !!target.uniqueIds,
    connections,
    duration,
  });
}
