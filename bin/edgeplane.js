#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx's loader: no build step between a clone and a run.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli/main.ts');
