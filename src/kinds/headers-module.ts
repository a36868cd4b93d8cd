import { described, enabled, object, strings } from './fields.js';
import type { ModuleDef } from './types.js';

// RFC 9110 field names are tokens; values are visible characters, spaces and tabs (no CR, LF, NUL).
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const VALUE = /^[\t\x20-\x7e\xa0-\u{10ffff}]*$/u;

/**
 * The request_headers and response_headers modules: the same rules, headers injected into the
 * request going upstream or the response going to the client. Names are stored in lower case
 * (HTTP names are case-insensitive) and must be unique ignoring case.
 */
export function headersModule(name: string): ModuleDef {
  const which = name === 'request_headers' ? 'request before it goes upstream' : 'response to the client';
  return {
    name,
    request: described(object({
      enabled,
      add: described({ type: 'object', maxProperties: 100, additionalProperties: { type: 'string', maxBytes: 4096 } }, `Headers added to the ${which}: name to value (at most 100; names are case-insensitive, values at most 4096 bytes). Default: none.`, [{ 'x-served-by': 'edgeplane' }]),
      remove: described(strings(100), `Header names removed from the ${which} (at most 100, case-insensitive). Default: none.`),
    }), `Adds and removes headers of the ${which}.`),
    defaults: { enabled: true, add: {}, remove: [] },
    reconcile: { normalize: { add: 'lowercase-keys', remove: 'lowercase-items' }, sets: ['remove'] },
    check(m, ctx) {
      const add = new Set<string>();
      for (const [header, value] of Object.entries(m.add as Record<string, string>)) {
        // Problems with a name sit at its key in a manifest.
        const at = { at: [name, 'add', header], key: true };
        if (!validName(header)) ctx.report([name, 'add'], nameRule(header), at);
        else if (add.has(header.toLowerCase())) ctx.report([name, 'add'], `header ${JSON.stringify(header)} is given twice (header names are case-insensitive)`, at);
        else if (!VALUE.test(value)) ctx.report([name, 'add', header], 'a header value may not hold control characters such as CR, LF or NUL');
        add.add(header.toLowerCase());
      }
      const remove = new Set<string>();
      (m.remove as string[]).forEach((header, i) => {
        if (!validName(header)) ctx.report([name, 'remove', i], nameRule(header));
        else if (remove.has(header.toLowerCase())) ctx.report([name, 'remove', i], `header ${JSON.stringify(header)} is listed twice (header names are case-insensitive)`);
        remove.add(header.toLowerCase());
      });
    },
    prepare(m) {
      // A Map: header names such as `__proto__` are plain names here, not object internals.
      const add = new Map<string, string>();
      for (const [header, value] of Object.entries(m.add as Record<string, string>)) add.set(header.toLowerCase(), value);
      m.add = Object.fromEntries(add);
      m.remove = (m.remove as string[]).map((h) => h.toLowerCase());
    },
    responseOrder: ['enabled', 'add', 'remove'],
  };
}

function validName(header: string): boolean {
  return header.length <= 256 && TOKEN.test(header);
}

function nameRule(header: string): string {
  return `${JSON.stringify(header.slice(0, 100))} is not a valid HTTP header name (1-256 letters, digits and !#$%&'*+.^_\`|~-)`;
}
