import { describe, expect, it } from 'vitest';
import { serverOptionsFromEnv } from '../../src/cli/service-config.js';

describe("serve's connection settings from the environment", () => {
  it('reserve an eighth of the slots and cap waiting connections per address unless set; a reserve as large as the cap is refused by name', () => {
    expect(serverOptionsFromEnv({})).toMatchObject({ maxConnections: 1024, maxConnectionsPerAddress: 256, maxWaitingConnectionsPerAddress: 64, connectionReserve: 128 });
    expect(serverOptionsFromEnv({ EDGEPLANE_MAX_CONNECTIONS: '200', EDGEPLANE_MAX_WAITING_CONNECTIONS_PER_ADDRESS: '0' })).toMatchObject({ maxWaitingConnectionsPerAddress: 0, connectionReserve: 25 });
    expect(serverOptionsFromEnv({ EDGEPLANE_CONNECTION_RESERVE: '0' }).connectionReserve).toBe(0);
    expect(() => serverOptionsFromEnv({ EDGEPLANE_MAX_CONNECTIONS: '100', EDGEPLANE_CONNECTION_RESERVE: '100' })).toThrow(/^EDGEPLANE_CONNECTION_RESERVE \(100\) must be less than EDGEPLANE_MAX_CONNECTIONS \(100\)/);
    expect(() => serverOptionsFromEnv({ EDGEPLANE_MAX_WAITING_CONNECTIONS_PER_ADDRESS: '-1' })).toThrow(/^EDGEPLANE_MAX_WAITING_CONNECTIONS_PER_ADDRESS: must be a whole number/);
  });
});
