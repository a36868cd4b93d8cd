import type { JSONSchema } from '../../kinds/types.js';

/**
 * The JSON Schemas of `variables:` and `environments:` of `edgeplane.yaml` (docs/manifests.md,
 * "Environments"). config.ts lists them among the stack file's keys; what they mean is read in
 * environments.ts. Kept here, with no import of the stack file's reading, so both can use them.
 */

/** A variable's name, as `{var: NAME}` and `${var.NAME}` write it. */
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** An environment's name (`--env NAME`); `all` is not one: `plan --env all` plans every one. */
export const ENVIRONMENT_NAME = /^(?!all$)[a-z0-9](?:[a-z0-9_-]{0,30}[a-z0-9])?$/;

/** The types a variable may have. */
export const VARIABLE_TYPES = ['string', 'number', 'boolean', 'list(string)', 'list(number)', 'list(boolean)'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];

const SCALAR_OR_LIST = {
  description: 'A value of the variable\'s type: a string, a number, a boolean, or a list of one of them.',
};

export const VARIABLES_SCHEMA: JSONSchema = {
  type: 'object',
  maxProperties: 1000,
  propertyNames: { pattern: VARIABLE_NAME.source },
  description: 'The variables manifests refer to: a whole field as {var: NAME} (typed: a number stays a number, a list a list), part of a string as ${var.NAME} ($${ writes a literal ${). Each environment sets their values (environments.NAME.values); one it does not set takes its default. An unknown variable, a value of the wrong type or one that fails its checks is an error (docs/manifests.md, "Environments").',
  additionalProperties: {
    type: 'object',
    additionalProperties: false,
    required: ['type'],
    properties: {
      type: { type: 'string', enum: [...VARIABLE_TYPES], description: 'string, number, boolean, or a list of one: list(string), list(number), list(boolean).' },
      description: { type: 'string', maxLength: 1000, description: 'What the variable is for (shown by `edgeplane validate` when a value is refused).' },
      default: { ...SCALAR_OR_LIST, description: 'The value of an environment that does not set one. Without a default every environment must set it.' },
      pattern: { type: 'string', minLength: 1, maxLength: 1000, description: 'A regular expression a string value (each item of a list) must match, whole (^…$ is implied).' },
      enum: { type: 'array', minItems: 1, maxItems: 1000, items: SCALAR_OR_LIST, description: 'The values allowed (for a list: for each item).' },
      min: { type: 'number', description: 'The smallest number allowed (for list(number): for each item); for list(string) and list(boolean): the fewest items.' },
      max: { type: 'number', description: 'The largest number allowed (for list(number): for each item); for list(string) and list(boolean): the most items.' },
    },
  },
  examples: [{ domain: { type: 'string', description: 'The public domain of the shop', pattern: '[a-z0-9.-]+' }, app_backends: { type: 'list(string)', min: 1 } }],
};

export const ENVIRONMENTS_SCHEMA: JSONSchema = {
  type: 'object',
  maxProperties: 100,
  propertyNames: { pattern: ENVIRONMENT_NAME.source },
  description: 'The environments of this repository (staging, production, …): the same manifests, each with its own stack name, variable values and overlays. With environments, every command that reads the manifests takes --env NAME (or EDGEPLANE_ENV); `plan --env all` plans each one, `edgeplane diff-env A B DIR` shows how two differ.',
  additionalProperties: {
    type: 'object',
    additionalProperties: false,
    properties: {
      stack: { type: 'string', pattern: '^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$', 'x-rule': 'must be lower-case letters, digits, ".", "_" or "-" (1-64 characters, starting and ending with a letter or digit)', description: 'The stack name of this environment: its objects\' ownership markers, its lock and its sync history are its own. Default: the file\'s stack name and the environment\'s, as stack-NAME (shop-production).' },
      values: { type: 'object', maxProperties: 1000, propertyNames: { pattern: VARIABLE_NAME.source }, additionalProperties: SCALAR_OR_LIST, description: 'The values of variables in this environment (each a declared variable of variables:).' },
      overlays: { type: 'array', maxItems: 100, items: { type: 'string', minLength: 1 }, description: 'Folders or files (relative to this file) whose documents patch objects of the manifests for this environment (overlay: patch, a JSON merge patch addressed by kind and name; routes by their name), add objects only it has (overlay: add) or leave one out (overlay: remove). They are not read as manifests of the stack.' },
      api_url: { type: 'string', pattern: '^https?://', 'x-rule': 'must be an http:// or https:// URL', description: 'The API this environment is planned and applied against (instead of the file\'s api_url; --api-url and EDGEPLANE_API_URL still override it).' },
      target_name: { type: 'string', minLength: 1, maxLength: 64, description: 'What the Markdown plan calls this environment\'s target (instead of the file\'s target_name).' },
      embedded: { type: 'boolean', description: 'This environment is meant for the embedded service (as embedded: of the file).' },
      description: { type: 'string', maxLength: 1000, description: 'What this environment is.' },
    },
  },
  examples: [{ staging: { values: { domain: 'staging.example.com' } }, production: { stack: 'shop-production', values: { domain: 'example.com' }, overlays: ['overlays/production'] } }],
};
