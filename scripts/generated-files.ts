import { join } from 'node:path';
import { MANIFEST_SCHEMA_FILE, MANIFEST_VALIDATORS_FILE, renderManifestSchema, renderManifestValidators, renderStackFileSchema, STACK_FILE_SCHEMA_FILE } from '../src/reconciler/manifests/schema-file.js';
import { renderServiceValidators, SERVICE_VALIDATORS_DIR } from '../src/service/validators-file.js';
import { renderServiceSerializers, SERVICE_SERIALIZERS_DIR } from '../src/service/serializers-file.js';
import { AGENT_SCHEMA_FILE, renderAgentSchema } from '../src/agent/config.js';
import { POLICY_SCHEMA_FILE, renderPolicySchema } from '../src/reconciler/policy/schema.js';

/** Directories `npm run schemas` owns whole: any file in them it does not write is stale (removed by it, failed by the staleness test). */
export const GENERATED_DIRS = [SERVICE_VALIDATORS_DIR, SERVICE_SERIALIZERS_DIR];

/** Every file `npm run schemas` writes, with its content as generated now (the staleness test compares them). */
export async function generatedFiles(): Promise<{ path: string; text: string }[]> {
  const manifest = renderManifestValidators();
  const service = await renderServiceValidators();
  const serializers = await renderServiceSerializers();
  return [
    { path: MANIFEST_SCHEMA_FILE, text: renderManifestSchema() },
    { path: STACK_FILE_SCHEMA_FILE, text: renderStackFileSchema() },
    { path: AGENT_SCHEMA_FILE, text: renderAgentSchema() },
    { path: POLICY_SCHEMA_FILE, text: renderPolicySchema() },
    { path: `${MANIFEST_VALIDATORS_FILE}.js`, text: manifest.js },
    { path: `${MANIFEST_VALIDATORS_FILE}.d.ts`, text: manifest.dts },
    ...service.map((f) => ({ path: join(SERVICE_VALIDATORS_DIR, f.name), text: f.text })),
    ...serializers.map((f) => ({ path: join(SERVICE_SERIALIZERS_DIR, f.name), text: f.text })),
  ];
}
