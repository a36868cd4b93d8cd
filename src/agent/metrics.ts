import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The agent's metrics (prom-client, as the service's): labels are stack names and a few fixed words. */
export interface AgentMetrics {
  registry: Registry;
  lastSuccess: Gauge<'stack'>;
  duration: Histogram<'outcome'>;
  drifted: Gauge<'stack'>;
  failures: Counter<'reason'>;
  syncs: Counter<'outcome'>;
  fetches: Counter<'outcome'>;
}

export function agentMetrics(): AgentMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    lastSuccess: new Gauge({ name: 'edgeplane_agent_last_success_timestamp_seconds', help: 'When the stack last synced without failing (Unix time)', labelNames: ['stack'], registers: [registry] }),
    duration: new Histogram({ name: 'edgeplane_agent_sync_duration_seconds', help: 'How long a sync took: lock, plan, apply, record', labelNames: ['outcome'], buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300], registers: [registry] }),
    drifted: new Gauge({ name: 'edgeplane_agent_objects_drifted', help: 'Changes the stack\'s last sync found and did not make', labelNames: ['stack'], registers: [registry] }),
    failures: new Counter({ name: 'edgeplane_agent_sync_failures_total', help: 'Failed syncs and fetches by reason: git, validation, blocked, apply, service', labelNames: ['reason'], registers: [registry] }),
    syncs: new Counter({ name: 'edgeplane_agent_syncs_total', help: 'Syncs recorded, by outcome', labelNames: ['outcome'], registers: [registry] }),
    fetches: new Counter({ name: 'edgeplane_agent_fetches_total', help: 'Git fetches, by outcome', labelNames: ['outcome'], registers: [registry] }),
  };
}
