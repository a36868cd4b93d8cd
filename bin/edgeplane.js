#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx's loader: no build step between a clone and a run.
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';
// edgeplane's own tsconfig, never one tsx would find from the working directory up: a tsconfig.json
// beside the manifests (in a pull request, say) could map edgeplane's imports to its own code.
register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
await import('../src/cli/main.ts');
