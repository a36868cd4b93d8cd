/**
 * Who used the machine's cores while a bench step ran (Linux only; elsewhere every reading is
 * undefined and the bench leaves the rows out). The reconciler's no-op plan shares two cores with
 * the service and PostgreSQL it reads from: these readings tell its own work from its waiting.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try { ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100; } catch { ticksPerSecond = 100; }
  }
  return ticksPerSecond;
}

/**
 * This process's main thread (the one that plans): time on a core and time runnable but waiting
 * for one, in ms since boot (`/proc/<pid>/task/<pid>/schedstat`).
 */
export function mainThreadTimes(): { runMs: number; waitMs: number } | undefined {
  try {
    const [run, wait] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ').map(Number);
    return { runMs: run / 1e6, waitMs: wait / 1e6 };
  } catch {
    return undefined;
  }
}

/** User + system CPU of processes (all their threads), in ms (clock-tick resolution: sum many runs). */
export function processesCpuMs(pids: number[]): number | undefined {
  try {
    let ticks = 0;
    for (const pid of pids) {
      // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    }
    return (ticks * 1000) / clockTicks();
  } catch {
    return undefined;
  }
}
