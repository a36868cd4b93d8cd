import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import { collectingAjv } from '../contract/validation.js';
import { didYouMean } from '../util/suggest.js';
import type { PolicyOverride } from '../reconciler/policy/types.js';

/** The sync agent's settings (`agent.yaml`, or the flags of `edgeplane agent`): docs/agent.md. */
export interface AgentConfig {
  sources: SourceConfig[];
  stacks: StackEntry[];
  /** The agent's own HTTP port (probes, metrics, the webhook); 0: any free port. */
  port: number;
  host: string;
  /** The environment variable holding the push webhook's secret; no webhook without it. */
  webhookSecretEnv?: string;
  /** Where the sources are fetched to (default: a folder of the system's temporary directory). */
  workDir?: string;
}

export interface SourceConfig { name: string; url: string; ref: string; intervalMs: number }

export interface StackEntry {
  source: string;
  /** A stack's folder (holding `edgeplane.yaml`), or a folder of such folders, inside the source. */
  path: string;
  mode: 'apply' | 'plan';
  driftIntervalMs: number;
  drift: 'report' | 'repair';
  suspend: boolean;
  /** Go ahead past the safety threshold, and with protected objects (as `apply --force` / `--allow-protected-changes`). */
  force: boolean;
  allowProtectedChanges: boolean;
  /** Policies whose denials its syncs go ahead past, each with the reason its runs record (as `--override-policy NAME --reason TEXT`). */
  overridePolicies?: PolicyOverride[];
}

const DURATION = { type: 'string', pattern: '^\\s*\\d+(?:\\.\\d+)?\\s*(?:ms|s|m|h)?\\s*$', 'x-rule': 'must be a duration such as 30s, 5m or 1h' };
const NAME = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$', 'x-rule': 'letters, digits, ".", "_" or "-" (1-63 characters)' };

const SOURCE_KEYS = {
  name: NAME,
  url: { type: 'string', minLength: 1, maxLength: 2000, description: 'A Git URL (https://, ssh://, git@host:path, file://) or a local path' },
  ref: { type: 'string', minLength: 1, maxLength: 255, description: 'A branch or tag (default HEAD: the repository\'s default branch)' },
  interval: { ...DURATION, description: 'How often it is fetched (default 1m)' },
};
const STACK_KEYS = {
  source: NAME,
  path: { type: 'string', minLength: 1, maxLength: 1000, description: 'A stack folder in the source, or a folder of stack folders (default: the source\'s root)' },
  mode: { enum: ['apply', 'plan'], description: 'apply: make the live state the commit\'s; plan: only report (default apply)' },
  interval: { ...DURATION, description: 'How often the live state is checked for drift (default 5m)' },
  drift: { enum: ['report', 'repair'], description: 'What a drift check does with changes made outside Git (default report)' },
  suspend: { type: 'boolean', description: 'Leave the stack alone (default false)' },
  force: { type: 'boolean', description: 'Apply past the safety threshold (default false)' },
  allow_protected_changes: { type: 'boolean', description: 'Delete and replace protected objects (default false)' },
  override_policies: {
    type: 'array', maxItems: 50, description: 'Policies whose denials its syncs go ahead past, each with the reason every run records (as plan and apply\'s --override-policy NAME --reason TEXT); a policy with overridable: false cannot be named',
    items: {
      type: 'object', additionalProperties: false, required: ['name', 'reason'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 200, description: 'The policy\'s name' },
        reason: { type: 'string', minLength: 1, maxLength: 500, pattern: '\\S', 'x-rule': 'must say why the policy is let through', description: 'Why it is let through: shown in the plan, kept in each run\'s record' },
      },
    },
  },
};
const TOP_KEYS = {
  sources: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'object', additionalProperties: false, required: ['name', 'url'], properties: SOURCE_KEYS } },
  stacks: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'object', additionalProperties: false, required: ['source'], properties: STACK_KEYS } },
  port: { type: 'integer', minimum: 0, maximum: 65535, description: 'The agent\'s HTTP port: /healthz, /readyz, /metrics, POST /hooks/git (default 8090)' },
  host: { type: 'string', minLength: 1, maxLength: 255, description: 'The address it listens on (default 127.0.0.1)' },
  webhook_secret_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'The environment variable holding the push webhook\'s secret' },
  work_dir: { type: 'string', minLength: 1, maxLength: 1000, description: 'Where the sources are fetched to' },
};

/** The JSON Schema of `agent.yaml`. */
export const AGENT_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://edgeplane.dev/schemas/agent.schema.json',
  title: 'edgeplane agent.yaml',
  type: 'object',
  additionalProperties: false,
  required: ['sources', 'stacks'],
  properties: TOP_KEYS,
};

/** Where the schema of `agent.yaml` is committed (`npm run schemas`), beside the manifests' and edgeplane.yaml's. */
export const AGENT_SCHEMA_FILE = fileURLToPath(new URL('../../schemas/agent.schema.json', import.meta.url));

export function renderAgentSchema(): string {
  return JSON.stringify(AGENT_SCHEMA, null, 2) + '\n';
}

export class AgentConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'AgentConfigError';
  }
}

/** A duration (`30s`, `5m`, `250ms`, a number of seconds) in milliseconds. */
export function durationMs(value: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/i.exec(value);
  if (!m) throw new AgentConfigError([`${JSON.stringify(value)} is not a duration such as 30s, 5m or 1h`]);
  return Math.round(Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's').toLowerCase() as 'ms' | 's' | 'm' | 'h']);
}

let validator: ReturnType<ReturnType<typeof collectingAjv>['compile']> | undefined;

const KEYS_AT: Record<string, string[]> = { '': Object.keys(TOP_KEYS), sources: Object.keys(SOURCE_KEYS), stacks: Object.keys(STACK_KEYS), override_policies: ['name', 'reason'] };

/**
 * Reads `agent.yaml` strictly: every problem at once, each at its line and column, an unknown key
 * with the key it most likely meant. Relative paths (a local source, `work_dir`) are the file's.
 */
export function readAgentConfig(file: string): AgentConfig {
  const text = readFileSync(file, 'utf8');
  const doc = parseDocument(text, { prettyErrors: false });
  const at = (path: (string | number)[], key = false): string => {
    const node = path.length ? (key ? keyNode(doc, path) : doc.getIn(path, true)) : doc.contents;
    const offset = (node as { range?: [number, number] } | undefined)?.range?.[0];
    if (offset === undefined) return file;
    const before = text.slice(0, offset).split('\n');
    return `${file}:${before.length}:${before.at(-1)!.length + 1}`;
  };
  if (doc.errors.length) throw new AgentConfigError(doc.errors.map((e) => `${file}:${e.linePos?.[0].line ?? 1}:${e.linePos?.[0].col ?? 1}: ${e.message.split('\n')[0]}`));
  const value = doc.toJS() as unknown;
  const validate = (validator ??= collectingAjv().compile({ ...AGENT_SCHEMA, $schema: undefined }));
  const problems: string[] = [];
  if (!validate(value)) {
    for (const e of validate.errors ?? []) {
      const path = e.instancePath.split('/').slice(1).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
      if (e.keyword === 'additionalProperties') {
        const key = String((e.params as { additionalProperty: string }).additionalProperty);
        const section = path[2] === 'override_policies' ? 'override_policies' : typeof path[0] === 'string' ? path[0] : '';
        problems.push(`${at([...path, key], true)}: ${key} is not a setting of agent.yaml${section ? ` ${section}` : ''}${didYouMean(key, KEYS_AT[section] ?? [])}; the settings are ${(KEYS_AT[section] ?? []).join(', ')}`);
      } else {
        const rule = (e.parentSchema as { 'x-rule'?: string } | undefined)?.['x-rule'];
        problems.push(`${at(path)}: ${path.join('.') || 'agent.yaml'} ${e.keyword === 'pattern' && rule ? rule : e.message ?? 'is not valid'}`);
      }
    }
    throw new AgentConfigError(problems);
  }
  const raw = value as { sources: Record<string, unknown>[]; stacks: Record<string, unknown>[]; port?: number; host?: string; webhook_secret_env?: string; work_dir?: string };
  const base = dirname(resolve(file));
  const config: AgentConfig = {
    sources: raw.sources.map((s) => ({ name: s.name as string, url: localOrUrl(s.url as string, base), ref: (s.ref as string | undefined) ?? 'HEAD', intervalMs: durationMs((s.interval as string | undefined) ?? '1m') })),
    stacks: raw.stacks.map((s) => stackEntry(s)),
    port: raw.port ?? 8090,
    host: raw.host ?? '127.0.0.1',
    webhookSecretEnv: raw.webhook_secret_env,
    workDir: raw.work_dir === undefined ? undefined : resolve(base, raw.work_dir),
  };
  checkConfig(config, (i) => at(['stacks', i, 'source']));
  return config;
}

function keyNode(doc: ReturnType<typeof parseDocument>, path: (string | number)[]): unknown {
  const parent = doc.getIn(path.slice(0, -1), true) as { items?: { key: { value?: unknown; range?: [number, number] } }[] } | undefined;
  return parent?.items?.find((p) => p.key?.value === path.at(-1))?.key;
}

/** A stack entry's settings with their defaults. */
export function stackEntry(s: Record<string, unknown>): StackEntry {
  return {
    source: s.source as string,
    path: (s.path as string | undefined) ?? '.',
    mode: (s.mode as StackEntry['mode'] | undefined) ?? 'apply',
    driftIntervalMs: durationMs((s.interval as string | undefined) ?? '5m'),
    drift: (s.drift as StackEntry['drift'] | undefined) ?? 'report',
    suspend: s.suspend === true,
    force: s.force === true,
    allowProtectedChanges: s.allow_protected_changes === true,
    overridePolicies: ((s.override_policies as { name: string; reason: string }[] | undefined) ?? []).map((o) => ({ policy: o.name, reason: o.reason.trim() })),
  };
}

/** A local path made absolute (from `base`); a URL as it is. */
export function localOrUrl(url: string, base: string): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url) || /^[^/\s]+@[^/\s]+:/.test(url)) return url;
  return isAbsolute(url) ? url : resolve(base, url);
}

/** What the schema cannot say: names unique, every stack's source declared, intervals in range. */
export function checkConfig(config: AgentConfig, where: (stackIndex: number) => string = (i) => `stacks[${i}]`): void {
  const problems: string[] = [];
  const names = new Set<string>();
  for (const s of config.sources) {
    if (names.has(s.name)) problems.push(`source ${s.name}: named twice`);
    names.add(s.name);
    if (s.intervalMs < 1000) problems.push(`source ${s.name}: interval must be at least 1s`);
  }
  config.stacks.forEach((s, i) => {
    if (!names.has(s.source)) problems.push(`${where(i)}: source ${s.source} is not one of the sources${didYouMean(s.source, names)} (${[...names].join(', ')})`);
    if (s.driftIntervalMs < 1000) problems.push(`${where(i)}: interval must be at least 1s`);
    if (s.path.split(/[\\/]/).includes('..') || isAbsolute(s.path)) problems.push(`${where(i)}: path must be a folder inside the source, not ${JSON.stringify(s.path)}`);
    const named = (s.overridePolicies ?? []).map((o) => o.policy);
    for (const n of new Set(named.filter((n, j) => named.indexOf(n) !== j))) problems.push(`${where(i)}: override_policies names ${n} twice`);
  });
  if (problems.length) throw new AgentConfigError(problems);
}
