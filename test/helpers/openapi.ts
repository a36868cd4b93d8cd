import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

type Doc = { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>>; components?: { schemas?: Record<string, unknown> } };

/**
 * Checks responses against the OpenAPI document the service publishes (`GET /openapi.json`): the
 * operation is found by method and path, the response by status (`201`, `4XX`, `default`), and a
 * JSON body must match its schema. `check` answers what is wrong, or null.
 */
export class SpecChecker {
  // Formats (uri, date-time) are documentation here: the values are the service's own.
  private readonly ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
  private readonly validators = new Map<unknown, ValidateFunction>();
  private readonly templates: { path: string; re: RegExp; literals: number }[];

  constructor(readonly doc: Doc) {
    this.templates = Object.keys(doc.paths).map((path) => ({
      path,
      re: new RegExp('^' + path.replace(/\{[^}]+\}/g, '[^/]+') + '$'),
      literals: path.split('/').filter((s) => s && !s.startsWith('{')).length,
    })).sort((a, b) => b.literals - a.literals);
  }

  /** The document's path template of a request path, if any. */
  template(path: string): string | undefined {
    const bare = path.split('?')[0];
    return this.templates.find((t) => t.re.test(bare))?.path;
  }

  check(method: string, path: string, status: number, contentType: string | null, text: string): string | null {
    const json = (contentType ?? '').startsWith('application/json');
    const template = this.template(path);
    const op = template ? this.doc.paths[template][method.toLowerCase()] : undefined;
    // A path or method no operation has: only an error in the error shape is expected.
    const responses = op?.responses ?? (status >= 400 ? this.doc.paths['/edges/https'].get.responses : undefined);
    if (!responses) return `${method} ${path} answered ${status}, but the document has no such operation`;
    const declared = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
    if (!declared) return `${method} ${template} answered ${status}, which the document does not declare`;
    const schema = declared.content?.['application/json']?.schema;
    if (!schema) return text === '' || !json ? null : `${method} ${template} ${status} has a body, but the document declares none`;
    if (!json) return `${method} ${template} ${status} is not JSON (${contentType})`;
    let v = this.validators.get(schema);
    if (!v) this.validators.set(schema, (v = this.ajv.compile(this.resolved(schema) as object)));
    if (v(JSON.parse(text))) return null;
    return `${method} ${template} ${status} does not match its schema: ${this.ajv.errorsText(v.errors)}`;
  }

  /** The schema with `#/components/schemas/X` references replaced by what they name. */
  private resolved(schema: unknown): unknown {
    if (Array.isArray(schema)) return schema.map((s) => this.resolved(s));
    if (!schema || typeof schema !== 'object') return schema;
    const ref = (schema as { $ref?: string }).$ref;
    if (ref?.startsWith('#/components/schemas/')) return this.resolved(this.doc.components!.schemas![ref.slice('#/components/schemas/'.length)]);
    return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, this.resolved(v)]));
  }
}

const checkers = new Map<string, Promise<SpecChecker | null>>();
/** By the document's text: services publishing the same document (a test file starts many) share one checker and its compiled schemas. */
const byDocument = new Map<string, SpecChecker>();

/** The checker of the service at `baseUrl` (its document read once); null when it publishes none. */
export function specChecker(baseUrl: string): Promise<SpecChecker | null> {
  let c = checkers.get(baseUrl);
  if (!c) {
    c = fetch(baseUrl + '/openapi.json').then(async (res) => {
      if (res.status !== 200) return null;
      const text = await res.text();
      let checker = byDocument.get(text);
      if (!checker) byDocument.set(text, (checker = new SpecChecker(JSON.parse(text) as Doc)));
      return checker;
    }, () => null);
    checkers.set(baseUrl, c);
  }
  return c;
}
