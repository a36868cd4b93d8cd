// The entry of an edgeplane worker thread that runs TypeScript (the embedded service's): workers
// do not inherit the TypeScript loader the main thread registered (bin/edgeplane.js, vitest), so
// it registers tsx for itself, then runs the module it was started for (workerData.module).
import { workerData } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

// edgeplane's own tsconfig, not one found from the working directory up (see bin/edgeplane.js).
register({ tsconfig: fileURLToPath(new URL('../../tsconfig.json', import.meta.url)) });
await import(workerData.module);
