import type { Agent } from 'node:http';

/** See http-exchange.mjs. */
export function keepAliveAgent(origin: string): Agent;

/** See http-exchange.mjs. */
export function exchange(
  url: string,
  opts: { method: string; agent: Agent; headers: Record<string, string> },
  payload?: string,
): Promise<{ status: number; headers: Record<string, string>; text: string }>;
