import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { CONFIG_FILES, manifestFiles } from '../../reconciler/manifests/load.js';
import { checkStack, stackLine } from '../../reconciler/manifests/config.js';
import { MANIFEST_SCHEMA_FILE, schemaModeline, STACK_FILE_SCHEMA_FILE } from '../../reconciler/manifests/schema-file.js';
import { displayPath } from '../../util/display-path.js';
import { CliExit, EXIT } from '../exit.js';
import { info, type Output } from '../output.js';
import { shellWord } from '../shell.js';

export interface InitFlags { stack?: string }

/** The stack name a directory suggests: its name, made a valid stack name (`My Edge` → `my-edge`). */
function stackNameFor(dir: string): string {
  const name = basename(resolve(dir)).toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '').slice(0, 64);
  return name || 'default';
}

const manifest = (edge: string) => `${schemaModeline(MANIFEST_SCHEMA_FILE)}
# One manifest file may hold any number of objects, separated by ---; every .yaml file in this
# directory (and below it) makes the stack. \`edgeplane validate .\` checks them all, \`edgeplane
# plan .\` shows what would change, \`edgeplane apply .\` makes it so.
#
# An HTTPS edge receives the traffic for its hostports; its routes send it on.
kind: HTTPSEdge
name: ${edge}
description: My first edge
hostports: ["www.example.com:443"]
# routes:
#   - name: site
#     match_type: path_prefix        # or exact_path
#     match: /
#     backend: { backend_id: app }   # a FailoverBackend of these manifests, by name
#     oidc:                          # sign-in first; the secret is read from the environment
#       issuer: https://accounts.google.com
#       client_id: my-client-id
#       client_secret: { env: MY_OIDC_SECRET }
`;

const GITIGNORE = `# edgeplane: the embedded database (its secrets, and the key that opens them) and saved plans
state/
*.plan.json
plan.json
`;

/**
 * `init [DIR]`: a stack to start from — edgeplane.yaml, one commented manifest, a .gitignore, and
 * editor settings mapping the YAML files there to this installation's schemas. It validates and
 * plans as written. A directory that already holds a stack is left alone: nothing is overwritten.
 */
export async function init(out: Output, dir: string | undefined, flags: InitFlags): Promise<void> {
  const root = dir ?? '.';
  if (existsSync(root) && !statSync(root).isDirectory()) throw new CliExit(EXIT.error, `${root}: not a directory`);
  const stack = checkStack(flags.stack ?? stackNameFor(root), '--stack');
  if (existsSync(root)) {
    const there = [...CONFIG_FILES.filter((c) => existsSync(join(root, c))), ...manifestFiles(root).map((f) => displayPath(f, resolve(root)))];
    if (there.length) throw new CliExit(EXIT.error, `${displayPath(root)} already holds a stack (${there.slice(0, 3).join(', ')}${there.length > 3 ? ', …' : ''}): nothing written; init makes a new one`);
  }
  mkdirSync(root, { recursive: true });
  const files: [string, string][] = [
    ['edgeplane.yaml', `${schemaModeline(STACK_FILE_SCHEMA_FILE)}\n# The settings of this stack (\`edgeplane plan --help\`, docs/manifests.md).\n${stackLine(stack)}\n`],
    ['https-edge.yaml', manifest('web')],
  ];
  const written: string[] = [];
  for (const [name, text] of files) {
    writeFileSync(join(root, name), text);
    written.push(name);
  }
  if (!existsSync(join(root, '.gitignore'))) {
    writeFileSync(join(root, '.gitignore'), GITIGNORE);
    written.push('.gitignore');
  }
  if (writeEditorSettings(root)) written.push('.vscode/settings.json');
  info(out, `initialised stack "${stack}" in ${displayPath(root)}: ${written.join(', ')}`);
  out.line(`next: edgeplane validate ${shellWord(displayPath(root))} && edgeplane plan ${shellWord(displayPath(root))}`);
}

/**
 * VS Code's YAML extension (yaml-language-server) settings: every .yaml file here is a manifest,
 * `edgeplane.yaml` the stack file (its modeline says so, and a modeline wins over settings).
 * Settings already there are kept: the schemas are added to them, or nothing is written when the
 * file is not plain JSON (comments: VS Code allows them, and rewriting would lose them).
 */
function writeEditorSettings(root: string): boolean {
  const path = join(root, '.vscode', 'settings.json');
  let settings: Record<string, unknown> = {};
  if (existsSync(path)) {
    try {
      settings = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    } catch {
      return false;
    }
    if (!settings || typeof settings !== 'object' || Array.isArray(settings)) return false;
  }
  const existing = settings['yaml.schemas'];
  // Not a mapping (a string, a list): the user's to fix, not ours to spread into one.
  if (existing !== undefined && (!existing || typeof existing !== 'object' || Array.isArray(existing))) return false;
  const schemas = { ...((existing as Record<string, unknown> | undefined) ?? {}) };
  schemas[MANIFEST_SCHEMA_FILE] = ['*.yaml', '*.yml'];
  schemas[STACK_FILE_SCHEMA_FILE] = ['edgeplane.yaml', 'edgeplane.yml'];
  settings['yaml.schemas'] = schemas;
  mkdirSync(join(root, '.vscode'), { recursive: true });
  writeFileSync(path, JSON.stringify(settings, null, 2) + '\n');
  return true;
}
