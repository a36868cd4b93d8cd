import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SyncAgent } from '../../agent/agent.js';
import { AgentConfigError, checkConfig, durationMs, localOrUrl, readAgentConfig, stackEntry, type AgentConfig } from '../../agent/config.js';
import { agentMetrics } from '../../agent/metrics.js';
import { agentServer } from '../../agent/server.js';
import { CliExit, EXIT, onStopSignals } from '../exit.js';
import { holderName } from '../holder.js';
import type { Output } from '../output.js';
import { reconcilerConfig } from '../service-config.js';
import { ttlSeconds } from '../stack-lock.js';
import { openTarget, type TargetFlags } from '../target.js';

export interface AgentFlags extends TargetFlags {
  config?: string;
  repo?: string;
  ref?: string;
  path?: string;
  interval?: string;
  driftInterval?: string;
  mode?: string;
  drift?: string;
  port?: string;
  host?: string;
  webhookSecretEnv?: string;
  workDir?: string;
}

const SIMPLE = ['repo', 'ref', 'path', 'interval', 'driftInterval', 'mode', 'drift'] as const;

/** The agent's settings: agent.yaml (--config), or the flags of the simple case (one source). */
export function agentConfigOf(flags: AgentFlags, cwd = process.cwd()): AgentConfig {
  try {
    let config: AgentConfig;
    if (flags.config) {
      const both = SIMPLE.filter((k) => flags[k] !== undefined);
      if (both.length) throw new CliExit(EXIT.error, `give either --config FILE or the flags of one source (--${both.join(', --')}), not both`);
      config = readAgentConfig(flags.config);
    } else {
      if (!flags.repo) throw new CliExit(EXIT.error, 'agent needs --repo URL|PATH (and --ref, --path), or --config agent.yaml');
      config = {
        sources: [{ name: 'repo', url: localOrUrl(flags.repo, cwd), ref: flags.ref ?? 'HEAD', intervalMs: durationMs(flags.interval ?? '1m') }],
        stacks: [stackEntry({ source: 'repo', path: flags.path ?? '.', interval: flags.driftInterval ?? '5m', mode: flags.mode ?? 'apply', drift: flags.drift ?? 'report' })],
        port: 8090,
        host: '127.0.0.1',
      };
      if (!['apply', 'plan'].includes(config.stacks[0].mode)) throw new CliExit(EXIT.error, `--mode must be apply or plan, not ${flags.mode}`);
      if (!['report', 'repair'].includes(config.stacks[0].drift)) throw new CliExit(EXIT.error, `--drift must be report or repair, not ${flags.drift}`);
      checkConfig(config, () => '--path');
    }
    if (flags.port !== undefined) {
      const port = Number(flags.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliExit(EXIT.error, `--port must be from 0 to 65535, not ${flags.port}`);
      config.port = port;
    }
    if (flags.host !== undefined) config.host = flags.host;
    if (flags.webhookSecretEnv !== undefined) config.webhookSecretEnv = flags.webhookSecretEnv;
    if (flags.workDir !== undefined) config.workDir = flags.workDir;
    return config;
  } catch (err) {
    if (err instanceof AgentConfigError) throw new CliExit(EXIT.error, err.message);
    throw err;
  }
}

/** `edgeplane agent`: keeps the stacks of Git sources equal to their commits (docs/agent.md). */
export async function agent(out: Output, flags: AgentFlags): Promise<void> {
  const config = agentConfigOf(flags);
  const secret = config.webhookSecretEnv ? process.env[config.webhookSecretEnv] : undefined;
  if (config.webhookSecretEnv && !secret) throw new CliExit(EXIT.error, `the webhook's secret: environment variable ${config.webhookSecretEnv} is not set`);
  // On the embedded default, other commands (status, history, plan) reach the state directory through it while it runs.
  const client = await openTarget(flags, { out, serveOthers: true });
  const ownWorkDir = config.workDir === undefined;
  const workDir = config.workDir ?? mkdtempSync(join(tmpdir(), 'edgeplane-agent-'));
  const metrics = agentMetrics();
  const stamp = () => new Date().toISOString().slice(0, 19) + 'Z';
  const sync = new SyncAgent(config, {
    client, holder: holderName('agent'), lockTtlSeconds: ttlSeconds(process.env), planConfig: reconcilerConfig(), env: process.env,
  }, metrics, { workDir, log: (line) => out.error(`${stamp()} ${line}`) });
  const server = agentServer({ status: () => sync.status(), metrics, webhookSecret: secret, onWebhook: () => sync.webhook() });
  server.listen(config.port, config.host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  out.line(`edgeplane agent on http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port} (/healthz, /readyz, /metrics${secret ? ', POST /hooks/git' : ''}), syncing ${config.stacks.length} stack entr${config.stacks.length === 1 ? 'y' : 'ies'} of ${config.sources.length} source${config.sources.length === 1 ? '' : 's'} on ${client.target}`);
  // SIGTERM or Ctrl-C: the sync in flight finishes its steps and releases its lock; then exit 0.
  const offSignals = onStopSignals((signal) => {
    out.error(`${stamp()} ${signal}: finishing the sync in flight, then stopping`);
    sync.stop();
  });
  try {
    await sync.run();
  } finally {
    offSignals();
    server.closeAllConnections();
    server.close();
    await client.close();
    if (ownWorkDir) rmSync(workDir, { recursive: true, force: true });
  }
}
