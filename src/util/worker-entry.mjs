// The entry of every edgeplane worker thread: workers do not inherit the TypeScript loader the
// main thread registered (bin/edgeplane.js, vitest), so each registers tsx for itself, then runs
// the module it was started for (see worker.ts).
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.module);
