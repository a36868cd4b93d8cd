import { join } from 'node:path';
import { ApiClient } from '../src/client/api-client.js';
import type { Transport } from '../src/client/transport.js';
import { embeddedTransport } from '../src/embedded/embedded.js';
import { applyPlan } from '../src/reconciler/apply/execute.js';
import { secretsFromMap } from '../src/reconciler/apply/materialize.js';
import { preparePlan } from '../src/reconciler/plan/prepare.js';
import { readLiveState } from '../src/reconciler/state/read-state.js';
import { caCertificates } from './ca-certs.js';
import { writeManifests, type BenchSize } from './reconcile-manifests.js';

export type RecordedPage = { status: number; headers: Record<string, string>; text: string };

/**
 * The bench stack of `size`, applied once to an embedded state directory kept in `cache`
 * (git-ignored) for the next run, and its list pages recorded: `replay` answers them from memory,
 * so what a bench then times is planning, not the service. Close `client` when done.
 */
export async function appliedStack(size: BenchSize, cache: string): Promise<{ manifests: string; stateDir: string; client: ApiClient; replay: ApiClient; pages: Map<string, RecordedPage> }> {
  const pems = caCertificates(size.cas, join(cache, 'ca-certs.json'));
  const manifests = join(cache, `alloc-manifests-${size.edges}-${size.cas}`);
  writeManifests(manifests, size, pems, 'alloc');
  const stateDir = join(cache, `alloc-state-${size.edges}-${size.cas}`);
  const client = new ApiClient(await embeddedTransport(stateDir));
  const first = await preparePlan({ root: manifests, stack: 'bench', env: {} }, client);
  if (first.plan!.steps.length) {
    console.error(`applying ${first.plan!.steps.length} steps (kept in ${stateDir} for the next run)…`);
    await applyPlan(first.plan!, { client, secrets: secretsFromMap(first.secrets), parallelism: 8 });
  }
  const pages = new Map<string, RecordedPage>();
  const recorder: Transport = {
    target: client.transport.target,
    async request(method, path, body) {
      const res = await client.transport.request(method, path, body);
      pages.set(path, { status: res.status, headers: res.headers, text: JSON.stringify(res.body) });
      return res;
    },
    close: async () => {},
  };
  await readLiveState(new ApiClient(recorder));
  const replay = new ApiClient({
    target: client.transport.target,
    async request(method, path) {
      const page = pages.get(path);
      if (method !== 'GET' || !page) throw new Error(`not recorded: ${method} ${path}`);
      return { status: page.status, headers: page.headers, body: JSON.parse(page.text) };
    },
    close: async () => {},
  });
  return { manifests, stateDir, client, replay, pages };
}
