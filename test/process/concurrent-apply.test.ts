import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { httpTransport } from '../../src/client/transport.js';
import { runCli, startServe, type Served } from '../helpers/cli.js';
import { cleanupDirs, duplicates, liveObjects, manifestDir, remaining } from '../helpers/reconcile.js';
import { ownSchema } from '../helpers/service.js';

/**
 * Two applies of one stack at once, each through its own `serve` replica of one PostgreSQL: the
 * stack lock lets one through, the other waits, plans from what the first made, and finds
 * nothing to do. EDGEPLANE_CONCURRENT_ROUNDS rounds (default 20).
 */
const ROUNDS = Number(process.env.EDGEPLANE_CONCURRENT_ROUNDS ?? 20);

/** Two failover backends (one refers to the other) and an edge with two routes: 5 objects, 5 creates. */
function manifests(tag: string): string {
  return [
    'kind: FailoverBackend\nname: inner\nbackends: [bkdhr_2ZyQ0aYvGmc8XkRb6fW1T3nLpEs]\n',
    'kind: FailoverBackend\nname: outer\nbackends: [inner]\n',
    `kind: HTTPSEdge\nname: web\nhostports: ["${tag}.example.com:443"]\nroutes:\n  - name: api\n    match_type: path_prefix\n    match: /api/\n    backend: { backend_id: outer }\n  - name: site\n    match_type: path_prefix\n    match: /\n    compression: {}\n`,
  ].join('---\n');
}
const OBJECTS = 5;

describe.skipIf(!process.env.DATABASE_URL)(`two applies of one stack at once on two replicas (${ROUNDS} rounds)`, { timeout: 300_000 }, () => {
  let schema: Awaited<ReturnType<typeof ownSchema>>;
  let replicas: Served[] = [];
  let key: string;
  beforeAll(async () => {
    schema = await ownSchema('ep_concurrent_');
    const env = { DATABASE_URL: schema.url.toString() };
    const created = await runCli(['admin', 'accounts', 'create', '--name', 'concurrent', '--json'], { env });
    expect(created.code, created.stderr).toBe(0);
    key = JSON.parse(created.stdout).api_key;
    replicas = await Promise.all([startServe([], { env }), startServe([], { env })]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await schema?.drop();
    cleanupDirs();
  });

  it('each round: both exit 0, the stack holds exactly the manifest\'s objects, the next plan is empty', async () => {
    const client = new ApiClient(httpTransport(replicas[0].url, key));
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const stack = `round-${round}`;
        const dir = manifestDir({ 'all.yaml': manifests(`r${round}-${Date.now()}`) });
        const both = await Promise.all(replicas.map((r) => runCli(['apply', dir, '--stack', stack, '--auto-approve'], {
          env: { EDGEPLANE_API_URL: r.url, EDGEPLANE_API_KEY: key },
        })));
        const said = both.map((b) => b.stdout + b.stderr).join('\n----\n');
        expect(both.map((b) => b.code), said).toEqual([0, 0]);
        // One made the 5 objects; the other planned after it and had nothing to do.
        const done = both.map((b) => Number(/Apply: (\d+) done/.exec(b.stdout)?.[1] ?? 0));
        expect(done.sort(), said).toEqual([0, 5]);
        const live = (await liveObjects(client)).filter((o) => o.identity.startsWith(`${stack}:`));
        expect(live, said).toHaveLength(OBJECTS);
        expect(duplicates(live)).toEqual([]);
        expect(await remaining(client, dir, stack)).toEqual([]);
      }
      expect(await client.listLocks()).toEqual([]); // every lock released
    } finally {
      await client.close();
    }
  });
});
