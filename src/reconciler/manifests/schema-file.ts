import { fileURLToPath } from 'node:url';
import { createAjv, schemaKey } from '../../contract/validation.js';
import { standaloneModule } from '../../contract/standalone.js';
import { buildStackFileSchema, STACK_FILE_SCHEMA_ID } from './config.js';
import { buildManifestSchema, manifestKinds, MANIFEST_SCHEMA_ID } from './schema.js';
import { buildPolicySchema, POLICY_SCHEMA_ID } from '../policy/schema.js';

/** Where the generated manifest schema is committed (editors point `yaml-language-server` at it). */
export const MANIFEST_SCHEMA_FILE = fileURLToPath(new URL('../../../schemas/manifest.schema.json', import.meta.url));

/** The editor's form: any field may be `{var: NAME}` (variables are substituted before the strict validation). */
export function renderManifestSchema(): string {
  return JSON.stringify(buildManifestSchema({ variables: true }), null, 2) + '\n';
}

/** Where the generated stack-file (`edgeplane.yaml`) schema is committed, beside the manifest schema. */
export const STACK_FILE_SCHEMA_FILE = fileURLToPath(new URL('../../../schemas/stack.schema.json', import.meta.url));

export function renderStackFileSchema(): string {
  return JSON.stringify(buildStackFileSchema(), null, 2) + '\n';
}

/**
 * The `yaml-language-server` modeline pointing at a schema of this installation, by absolute
 * path. Files `export` and `init` write carry it, and it still resolves after the folder is
 * copied or moved (a relative path, as the examples use inside this repository, breaks then);
 * it names the schema of the edgeplane that wrote it, the version that will read the files. On
 * another machine, or after edgeplane moved, the editor finds no schema and the file is unchanged
 * otherwise: `edgeplane init` writes editor settings of that machine's own.
 */
export function schemaModeline(schemaFile: string): string {
  return `# yaml-language-server: $schema=${schemaFile}`;
}

/** Where the precompiled manifest validators are committed (`.js` and `.d.ts`). */
export const MANIFEST_VALIDATORS_FILE = fileURLToPath(new URL('../../generated/manifest-validators', import.meta.url));

/**
 * The manifest validators, one per manifest kind, as ajv standalone code compiled by the
 * collecting (all errors) Ajv configuration, with `SCHEMA_KEY`: the key of the manifest schema
 * they were compiled from; and the stack file's (`StackFile`, `STACK_FILE_KEY`) and the policy
 * schema's (`Policy`, `POLICY_KEY`), so a command that reads `edgeplane.yaml` or policies loads
 * no Ajv to compile them.
 */
export function renderManifestValidators(): { js: string; dts: string } {
  const schema = buildManifestSchema();
  const stackFile = buildStackFileSchema();
  const ajv = createAjv({ allErrors: true, standalone: 'esm' });
  ajv.addSchema(schema);
  ajv.addSchema(stackFile);
  const policy = buildPolicySchema();
  ajv.addSchema(policy);
  const refs = Object.fromEntries(manifestKinds().map((k) => [k.manifestKind!, `${MANIFEST_SCHEMA_ID}#/definitions/${k.manifestKind}`]));
  return standaloneModule(ajv, 'the manifest validators (src/reconciler/manifests/schema.ts)', { ...refs, StackFile: STACK_FILE_SCHEMA_ID, Policy: POLICY_SCHEMA_ID }, {
    SCHEMA_KEY: schemaKey(schema), STACK_FILE_KEY: schemaKey(stackFile), POLICY_KEY: schemaKey(policy),
  });
}
